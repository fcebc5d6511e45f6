// Checks every route needs before its handler runs, so no route can forget one.
import type { FastifyInstance } from 'fastify'
import { ProblemError } from './problem.js'
import { childPath, findUnstorable } from './storable-json.js'

/**
 * Refuse, on every route, a query parameter given more than once (Fastify would hand the
 * handler an array where it expects a string), and any path parameter, query value or body
 * that PostgreSQL could not store or that nests too deep to walk (400, naming the field).
 *
 * @param app - the service's Fastify app, before its routes are registered
 */
export function installRequestGuards(app: FastifyInstance): void {
  app.addHook('preValidation', (request, _reply, done) => {
    const query = (request.query ?? {}) as Record<string, unknown>
    for (const [name, value] of Object.entries(query)) {
      if (Array.isArray(value)) {
        const issue = `${childPath('query', name)}: given ${value.length} times; give each query parameter once`
        return done(new ProblemError('bad-request', issue, { errors: [issue] }))
      }
    }
    const issue =
      findUnstorable(request.params, 'params') ??
      findUnstorable(query, 'query') ??
      findUnstorable(request.body, 'body')
    if (issue !== undefined)
      return done(new ProblemError('bad-request', issue, { errors: [issue] }))
    done()
  })
}
