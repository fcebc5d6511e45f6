import { describe, expect, it } from 'vitest'
import { createRulesService, type Db } from '@floodgate/rules-service'
import { TOKENS } from './helpers.js'

// A database that works for migrations and then goes away: every request must get a clean
// 503 problem without the driver's message, and the health check must fail.
function flakyDb(): Db & { down: boolean } {
  const db = {
    kind: 'postgres' as const,
    down: false,
    query<Row extends object>(sql: string): Promise<Row[]> {
      if (db.down)
        return Promise.reject(
          Object.assign(new Error('connect ECONNREFUSED 10.0.0.1:5432 password=hunter2'), {
            code: 'ECONNREFUSED',
          }),
        )
      return Promise.resolve(
        sql.startsWith('SELECT id FROM floodgate_migrations') ? [] : ([] as Row[]),
      )
    },
    transaction<T>(fn: (tx: Db) => Promise<T>): Promise<T> {
      return fn(db)
    },
    close: () => Promise.resolve(),
  }
  return db
}

describe('when the database is down', () => {
  it('answers 503 problems, fails the health check and leaks nothing', async () => {
    const db = flakyDb()
    const app = await createRulesService({
      db,
      tokens: [{ name: 'ops', role: 'admin', token: TOKENS.admin }],
    })
    try {
      db.down = true
      for (const [method, url] of [
        ['GET', '/v1/services/checkout/ruleset'],
        ['GET', '/healthz'],
        ['DELETE', '/v1/services/checkout/rules/a'],
      ] as const) {
        const res = await app.inject({
          method,
          url,
          headers: { authorization: `Bearer ${TOKENS.admin}` },
        })
        expect(res.statusCode, url).toBe(503)
        expect(res.headers['content-type']).toMatch(/^application\/problem\+json/)
        expect(res.json()).toMatchObject({ status: 503, title: 'Service unavailable' })
        expect(res.headers['retry-after']).toBe('5')
        expect(res.body).not.toMatch(/ECONNREFUSED|hunter2/)
      }
    } finally {
      await app.close()
    }
  })
})
