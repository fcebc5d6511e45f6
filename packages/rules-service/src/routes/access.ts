import type { FastifyReply, FastifyRequest } from 'fastify'
import { canRead, canWrite, type Principal, type TokenRegistry } from '../auth.js'
import { ProblemError } from '../problem.js'

/** Who may read and who may change a service, for every route that needs to know. */
export interface AccessChecks {
  /** The caller allowed to read `service`; anonymous reads pass unless a read token is required. */
  reader(
    this: void,
    request: FastifyRequest,
    reply: FastifyReply,
    service: string,
  ): Principal | undefined
  /** The caller allowed to change `service`; throws 401/403 otherwise. */
  writer(this: void, request: FastifyRequest, reply: FastifyReply, service: string): Principal
}

/**
 * @param tokens - the configured tokens
 * @param requireReadToken - whether reads need a token
 * @returns the checks
 */
export function accessChecks(tokens: TokenRegistry, requireReadToken: boolean): AccessChecks {
  const principalOf = (request: FastifyRequest): Principal | undefined =>
    tokens.authenticate(request.headers.authorization)

  const unauthorized = (reply: FastifyReply, detail: string): ProblemError => {
    reply.header('www-authenticate', 'Bearer realm="floodgate-rules"')
    return new ProblemError('unauthorized', detail)
  }

  const reader = (
    request: FastifyRequest,
    reply: FastifyReply,
    service: string,
  ): Principal | undefined => {
    const principal = principalOf(request)
    if (request.headers.authorization !== undefined && principal === undefined) {
      throw unauthorized(reply, 'the bearer token is not one this service knows')
    }
    if (principal === undefined) {
      if (requireReadToken)
        throw unauthorized(reply, 'reading rules needs a bearer token (Authorization: Bearer …)')
      return undefined
    }
    // Open reads stay open to every caller; scopes only narrow reads that need a token.
    if (requireReadToken && service !== '' && !canRead(principal, service)) {
      throw new ProblemError(
        'forbidden',
        `token ${JSON.stringify(principal.name)} may not read service ${JSON.stringify(service)}`,
      )
    }
    return principal
  }

  const writer = (request: FastifyRequest, reply: FastifyReply, service: string): Principal => {
    const principal = principalOf(request)
    if (principal === undefined) {
      throw unauthorized(
        reply,
        request.headers.authorization === undefined
          ? 'changing rules needs a bearer token (Authorization: Bearer …)'
          : 'the bearer token is not one this service knows',
      )
    }
    if (!canWrite(principal, service)) {
      throw new ProblemError(
        'forbidden',
        `token ${JSON.stringify(principal.name)} may not change service ${JSON.stringify(service)}`,
      )
    }
    return principal
  }

  return { reader, writer }
}
