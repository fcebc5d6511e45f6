import type { AddressInfo } from 'node:net'
import { createLimiter, type RuleInput } from '@floodgate/core'
import { sendRaw } from '@floodgate/core/testing'
import { rateLimit } from '@floodgate/fastify'
import Fastify, { type FastifyInstance, type FastifyRequest } from 'fastify'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'

// Limits far above what the test sends: only which rules apply is observed.
const big = { limit: 1_000_000, window: '1m' } as const
const rules: readonly RuleInput[] = [
  { id: 'list', match: 'GET /users', ...big },
  { id: 'year', match: 'GET /reports/2024', ...big },
]

/**
 * A Fastify app on a real port behind `rules`, with the routes `routes` adds; `ruleIds()` is
 * the sorted ids of the rules the last request met.
 */
function serve(rules: readonly RuleInput[], routes: (app: FastifyInstance) => void) {
  let last: string[] | undefined
  const limiter = createLimiter<FastifyRequest>({
    rules,
    onDecision: (d) => (last = d.outcomes.map((o) => o.rule.id).sort()),
  })
  let app: FastifyInstance
  const served = { port: 0, ruleIds: () => last, forget: () => (last = undefined) }
  beforeAll(async () => {
    app = Fastify()
    await app.register(rateLimit, { rules: limiter })
    routes(app)
    await app.listen({ port: 0, host: '127.0.0.1' })
    served.port = (app.server.address() as AddressInfo).port
  })
  afterAll(async () => {
    await app.close()
    await limiter.close()
  })
  return served
}

describe('fastify: routes whose pattern holds a ?', () => {
  const served = serve(rules, (app) => {
    // An optional last parameter: the route serves /users as well as /users/42.
    app.get('/users/:id?', (request, reply) => void reply.send({ params: request.params }))
    // A lazy quantifier in a regular-expression parameter.
    app.get('/reports/:year(^\\d{4}?)', (request, reply) => void reply.send(request.params))
  })

  it.each([
    ['/users', ['list']],
    ['/users/', ['list']],
    ['/users/42', []],
    ['/reports/2024', ['year']],
  ])('%s meets the rules on its own path', async (target, want) => {
    served.forget()
    const r = await sendRaw(served.port, 'GET', target)
    expect(r.status).toBe(200)
    expect(served.ruleIds()).toEqual(want)
  })
})

describe('fastify: a parameter left empty', () => {
  const served = serve(
    [
      { id: 'posts', match: 'GET /users/posts', ...big },
      { id: 'files', match: 'GET /files', ...big },
    ],
    (app) => {
      app.get('/users/:id/posts', (request, reply) => void reply.send(request.params))
      app.get('/files/:name', (request, reply) => void reply.send(request.params))
    },
  )

  // Fastify routes these with an empty parameter; the path, without its empty segments, is
  // /users/posts and /files.
  it.each([
    ['/users//posts', '{"id":""}', ['posts']],
    ['/files/', '{"name":""}', ['files']],
    ['/users/42/posts', '{"id":"42"}', []],
  ])('%s meets the rules on its own path', async (target, body, want) => {
    served.forget()
    const r = await sendRaw(served.port, 'GET', target)
    expect(r.body).toBe(body)
    expect(served.ruleIds()).toEqual(want)
  })
})
