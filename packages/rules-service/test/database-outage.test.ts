import { createLimiter, httpRules, type Logger } from '@floodgate/core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createRulesService, type RulesServiceApp } from '@floodgate/rules-service'
import { DATABASE_URL, TOKENS, dropSchema, postgresAvailable, uniqueSchema } from './helpers.js'
import { startPgProxy, type PgProxy } from './pg-proxy.js'

// The real PostgreSQL behind a proxy that is cut (connections dropped, connects refused, as when
// the server stops or the network fails) and restored. While it is down every request that needs
// the database answers 503 with a problem that says so (not a 500, which reads as a bug in the
// service), a host polling the service keeps its rules, and both recover with the database.
const hasPostgres = await postgresAvailable()
const schema = uniqueSchema('fg_rules_outage')
const auth = { authorization: `Bearer ${TOKENS.admin}` }

describe.skipIf(!hasPostgres)('while PostgreSQL is unreachable', () => {
  let proxy: PgProxy
  let app: RulesServiceApp
  let base = ''

  beforeAll(async () => {
    proxy = await startPgProxy(DATABASE_URL)
    app = await createRulesService({
      databaseUrl: proxy.url,
      schema,
      services: ['checkout'],
      tokens: [{ name: 'ops', role: 'admin', token: TOKENS.admin }],
      logger: false,
    })
    base = await app.listen({ port: 0, host: '127.0.0.1' })
  })

  afterAll(async () => {
    await app?.close()
    await proxy?.close()
    await dropSchema(schema)
  })

  it('answers 503 problems naming the database, keeps a host on its rules, and recovers', async () => {
    const put = (id: string) =>
      app.inject({
        method: 'PUT',
        url: `/v1/services/checkout/rules/${id}`,
        headers: auth,
        payload: { rate: '5/1m' },
      })
    expect((await put('before')).statusCode).toBe(201)

    const warnings: string[] = []
    const note = (fields: unknown, msg?: string): void => {
      const err = (fields as { err?: unknown } | undefined)?.err
      warnings.push(`${msg ?? ''} ${err instanceof Error ? err.message : ''}`)
    }
    const logger: Logger = { debug: () => {}, info: () => {}, warn: note, error: note }
    const source = httpRules(`${base}/v1/services/checkout/ruleset`, { intervalMs: 600_000 })
    const limiter = createLimiter({ rules: source, logger })
    await limiter.ready
    expect(limiter.rules.map((r) => r.id)).toEqual(['before'])

    await proxy.cut()
    try {
      const requests = [
        ['GET', '/v1/services/checkout/ruleset'],
        ['GET', '/v1/services/checkout/rules/before'],
        ['GET', '/v1/services'],
        ['GET', '/v1/services/checkout/audit'],
        ['GET', '/healthz'],
        ['PUT', '/v1/services/checkout/rules/during'],
        ['DELETE', '/v1/services/checkout/rules/before'],
      ] as const
      for (const [method, url] of requests) {
        const res = await app.inject({
          method,
          url,
          headers: auth,
          ...(method === 'PUT' ? { payload: { rate: '5/1m' } } : {}),
        })
        expect(res.statusCode, `${method} ${url}: ${res.body}`).toBe(503)
        expect(res.headers['content-type']).toMatch(/^application\/problem\+json/)
        expect(res.headers['retry-after']).toMatch(/^\d+$/)
        const body = res.json<{ type: string; detail: string }>()
        expect(body.type).toMatch(/#problem-unavailable$/)
        expect(body.detail).toMatch(/database/)
        expect(res.body).not.toContain(proxy.url)
      }
      await source.poll()
      expect(limiter.rules.map((r) => r.id)).toEqual(['before'])
      expect(warnings.join('\n')).toMatch(/HTTP 503/)
    } finally {
      await proxy.restore()
    }

    // The pool replaces the dropped connections; what was refused was not stored.
    expect((await put('after')).statusCode).toBe(201)
    const set = await app.inject({ method: 'GET', url: '/v1/services/checkout/ruleset' })
    expect(set.json()).toMatchObject({ revision: 2, rules: [{ id: 'before' }, { id: 'after' }] })
    await limiter.close()
  })
})
