// Every error response is application/problem+json, whoever produces it: a route's ProblemError,
// Fastify's own errors (bad JSON, 415, 413, a bad percent-encoding, a path parameter too long),
// an unknown route, a request Node's HTTP parser refuses before Fastify sees it (headers or URL
// too large, garbage), and requests that arrive while the service shuts down.
import { STATUS_CODES } from 'node:http'
import type { Socket } from 'node:net'
import type { FastifyInstance, FastifyReply, FastifyServerOptions } from 'fastify'
import {
  PROBLEM_MEDIA_TYPE,
  ProblemError,
  problemBody,
  problemForStatus,
  type ProblemBody,
} from './problem.js'
import { RouteMethods } from './route-methods.js'
import { CommitOutcomeUnknown, isDatabaseOutage } from './db/db-unavailable.js'

const CONTENT_TYPE = `${PROBLEM_MEDIA_TYPE}; charset=utf-8`

interface FastifyLikeError {
  statusCode?: number
  code?: string
  message?: string
}

/**
 * Map any error a request met to a problem.
 *
 * @param err - a ProblemError, a Fastify error, or anything thrown
 * @returns the status and body to answer
 */
export function toProblem(err: unknown): { status: number; body: ProblemBody } {
  if (err instanceof ProblemError) return { status: err.status, body: err.toBody() }
  const e = (typeof err === 'object' && err !== null ? err : {}) as FastifyLikeError
  const message = e.message ?? 'unknown error'
  const answer = (body: ProblemBody) => ({ status: body.status, body })
  switch (e.code) {
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return answer(problemBody('payload-too-large', message))
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return answer(
        problemBody('unsupported-media-type', `${message}; send Content-Type: application/json`),
      )
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
    case 'FST_ERR_CTP_INVALID_JSON_BODY':
      return answer(problemBody('invalid-json', message))
    case 'FST_ERR_BAD_URL':
      return answer(
        problemBody(
          'bad-request',
          'the path is not a valid URL: a % must be followed by two hex digits of valid UTF-8',
        ),
      )
    case 'FST_ERR_MAX_PARAM_LENGTH':
      return answer(
        problemBody(
          'uri-too-long',
          'a path segment is longer than the service accepts (service names are at most 100 characters)',
        ),
      )
  }
  if (e.statusCode === 400 && err instanceof SyntaxError) {
    return answer(problemBody('invalid-json', `the body is not valid JSON: ${message}`))
  }
  if (e.statusCode !== undefined && e.statusCode >= 400 && e.statusCode < 500) {
    return answer(problemForStatus(e.statusCode, message))
  }
  if (err instanceof CommitOutcomeUnknown) {
    return answer(
      problemBody(
        'unavailable',
        'the database connection was lost while the write was being committed, and the database could not be asked whether it was stored: read the set before writing again',
      ),
    )
  }
  // The driver's message stays in the log: it can name hosts, users and addresses.
  if (isDatabaseOutage(err)) {
    return answer(
      problemBody(
        'unavailable',
        'the database is unavailable or too slow; retry shortly (hosts keep the rules they have)',
      ),
    )
  }
  return answer(problemBody('internal', 'the service failed; see its logs'))
}

/** Seconds a client is asked to wait before retrying a request the database could not serve. */
export const DATABASE_RETRY_AFTER_S = 5

/**
 * Node's HTTP parser refused the request before Fastify saw it. A request line too long to
 * parse is a URL too long (414); otherwise too many header bytes (431), a timeout (408), or a
 * malformed request (400).
 */
function clientErrorProblem(err: NodeJS.ErrnoException & { rawPacket?: Buffer }): ProblemBody {
  if (err.code === 'ERR_HTTP_REQUEST_TIMEOUT') {
    return problemBody('request-timeout', 'the request did not arrive in time')
  }
  if (err.code === 'HPE_HEADER_OVERFLOW') {
    const end = err.rawPacket?.indexOf('\r\n') ?? -1
    if (end < 0 || end > 4096) {
      return problemBody('uri-too-long', 'the URL is longer than the service accepts')
    }
    return problemBody(
      'headers-too-large',
      'the request headers are larger than the service accepts',
    )
  }
  return problemBody('bad-request', 'the request is not valid HTTP/1.1')
}

/** Fastify options that route its framework and connection errors through problems. */
export const errorResponseServerOptions: Pick<
  FastifyServerOptions,
  'frameworkErrors' | 'clientErrorHandler' | 'return503OnClosing'
> = {
  frameworkErrors(err, _request, reply) {
    const { status, body } = toProblem(err)
    // Fastify types this reply by the route's schema; these errors belong to no route.
    void (reply as unknown as FastifyReply).code(status).type(CONTENT_TYPE).send(body)
  },
  clientErrorHandler(this: FastifyInstance, err: Error, socket: Socket) {
    const error = err as NodeJS.ErrnoException & { rawPacket?: Buffer }
    if (error.code === 'ECONNRESET' || socket.destroyed) return
    const body = JSON.stringify(clientErrorProblem(error))
    const status = (JSON.parse(body) as ProblemBody).status
    // Only the code: the error's rawPacket holds the request's bytes, credentials included.
    this.log.debug({ code: error.code, status }, 'client error')
    if (!socket.writable) {
      socket.destroy()
      return
    }
    socket.end(
      `HTTP/1.1 ${status} ${STATUS_CODES[status] ?? ''}\r\nConnection: close\r\n` +
        `Content-Type: ${CONTENT_TYPE}\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
    )
  },
  // Fastify's own 503 while closing is plain JSON; installErrorResponses answers it instead.
  return503OnClosing: false,
}

/**
 * Answer every error as a problem: the error and not-found handlers, a 503 once the service is
 * closing, and a last net that turns any other error response into one.
 *
 * @param app - the service's Fastify app, built with {@link errorResponseServerOptions}
 */
export function installErrorResponses(app: FastifyInstance): void {
  app.setErrorHandler((err, request, reply) => {
    const { status, body } = toProblem(err)
    if (status >= 500) request.log.error({ err }, 'request failed')
    if (status === 503) void reply.header('retry-after', String(DATABASE_RETRY_AFTER_S))
    return reply.code(status).type(CONTENT_TYPE).send(body)
  })
  const routes = new RouteMethods()
  app.addHook('onRoute', (route) => routes.add(route.url, route.method))
  app.setNotFoundHandler((request, reply) => {
    const path = request.url.split('?')[0] ?? ''
    const allowed = routes.allowed(request.url)
    // A route that takes the method and found nothing (an unknown admin file) is a 404 too.
    if (allowed.length === 0 || allowed.includes(request.method)) {
      return reply
        .code(404)
        .type(CONTENT_TYPE)
        .send(problemBody('not-found', `no route ${request.method} ${path}`))
    }
    const allow = [...allowed, 'OPTIONS'].join(', ')
    if (request.method === 'OPTIONS') return reply.code(204).header('allow', allow).send()
    return reply
      .code(405)
      .header('allow', allow)
      .type(CONTENT_TYPE)
      .send(
        problemBody(
          'method-not-allowed',
          `${path} does not take ${request.method}; it takes ${allow}`,
        ),
      )
  })

  let closing = false
  app.addHook('preClose', (done) => {
    closing = true
    done()
  })
  app.addHook('onRequest', (_request, reply, done) => {
    if (!closing) return done()
    void reply
      .code(503)
      .header('connection', 'close')
      .type(CONTENT_TYPE)
      .send(problemBody('unavailable', 'the service is shutting down; retry shortly'))
  })

  // Whatever else answers an error (a plugin, Fastify itself) is rewritten as a problem.
  app.addHook('onSend', (_request, reply, payload, done) => {
    const type = String(reply.getHeader('content-type') ?? '')
    if (reply.statusCode < 400 || type.startsWith(PROBLEM_MEDIA_TYPE)) return done(null, payload)
    let detail = STATUS_CODES[reply.statusCode] ?? 'error'
    if (typeof payload === 'string') {
      try {
        const parsed = JSON.parse(payload) as { message?: unknown }
        if (typeof parsed.message === 'string') detail = parsed.message
      } catch {
        // Not JSON: the status text says enough.
      }
    }
    void reply.type(CONTENT_TYPE)
    done(null, JSON.stringify(problemForStatus(reply.statusCode, detail)))
  })
}
