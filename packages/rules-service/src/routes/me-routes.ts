import type { FastifyInstance } from 'fastify'
import type { TokenRegistry } from '../auth.js'
import { ProblemError } from '../problem.js'

/** What `GET /v1/me` answers: who the bearer token is and what it may change. */
export interface MeBody {
  /** The token's name (the audit trail's actor), or null without a token. */
  name: string | null
  /** Its role, or null without a token (read-only). */
  role: 'admin' | 'write' | 'read' | null
  /** Services it covers, or null for every service (admin, and read tokens without a list). */
  services: string[] | null
}

/**
 * Register `GET /v1/me`: lets a client (the admin page) show only the actions the token may
 * take, instead of offering edits the service will refuse. It tells nothing a caller without
 * the token could use: an unknown token is a 401, as everywhere.
 */
export function meRoutes(app: FastifyInstance, tokens: TokenRegistry): void {
  app.get('/v1/me', (request, reply): MeBody => {
    const header = request.headers.authorization
    if (header === undefined) return { name: null, role: null, services: null }
    const principal = tokens.authenticate(header)
    if (principal === undefined) {
      reply.header('www-authenticate', 'Bearer realm="floodgate-rules"')
      throw new ProblemError('unauthorized', 'the bearer token is not one this service knows')
    }
    return {
      name: principal.name,
      role: principal.role,
      services: principal.services === undefined ? null : [...principal.services].sort(),
    }
  })
}
