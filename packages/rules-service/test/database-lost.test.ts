import pg from 'pg'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createRulesService, type RulesServiceApp } from '@floodgate/rules-service'
import {
  DATABASE_URL,
  TOKENS,
  dropSchema,
  postgresAvailable,
  putCheckoutRule,
  uniqueSchema,
} from './helpers.js'

// A real PostgreSQL server that drops the service's connection in the middle of a write (a
// restart, a failover, an administrator's pg_terminate_backend): that write fails with a 503,
// and the service keeps answering. The connection is found by an application name of its own.
const hasPostgres = await postgresAvailable()
const schema = uniqueSchema('fg_rules_lost')
const appName = `floodgate_lost_${process.pid}`
const withName = (url: string, name: string): string =>
  `${url}${url.includes('?') ? '&' : '?'}application_name=${name}`

describe.skipIf(!hasPostgres)('when PostgreSQL drops a connection mid-write', () => {
  let app: RulesServiceApp
  const admin = new pg.Client({ connectionString: DATABASE_URL })

  beforeAll(async () => {
    app = await createRulesService({
      databaseUrl: withName(DATABASE_URL, appName),
      schema,
      services: ['checkout'],
      tokens: [{ name: 'ops', role: 'admin', token: TOKENS.admin }],
    })
    await admin.connect()
  })

  afterAll(async () => {
    await app?.close()
    await admin.end().catch(() => {})
    await dropSchema(schema)
  })

  const putRule = (id: string) => putCheckoutRule(app, id)

  it('answers the write 503, stores nothing of it, and keeps serving', async () => {
    // Hold the service's row so the write waits inside its transaction, then end its session.
    const holder = new pg.Client({ connectionString: withName(DATABASE_URL, `${appName}_holder`) })
    await holder.connect()
    try {
      await holder.query('BEGIN')
      await holder.query(`SELECT 1 FROM ${schema}.services WHERE name = 'checkout' FOR UPDATE`)
      const write = putRule('lost')
      let waiting: number[] = []
      for (let i = 0; i < 200 && waiting.length === 0; i++) {
        await new Promise((resolve) => setTimeout(resolve, 25))
        const rows = await admin.query<{ pid: number }>(
          "SELECT pid FROM pg_stat_activity WHERE application_name = $1 AND wait_event_type = 'Lock'",
          [appName],
        )
        waiting = rows.rows.map((r) => r.pid)
      }
      expect(waiting).toHaveLength(1)
      await admin.query('SELECT pg_terminate_backend($1)', [waiting[0]])
      const res = await write
      expect(res.statusCode).toBe(503)
      expect(res.headers['content-type']).toMatch(/^application\/problem\+json/)
      expect(res.body).not.toMatch(/terminat/i)
    } finally {
      await holder.query('ROLLBACK').catch(() => {})
      await holder.end()
    }
    // The process is alive and the pool has replaced the connection.
    for (const id of ['after-1', 'after-2', 'after-3']) {
      expect((await putRule(id)).statusCode).toBe(201)
    }
    const set = await app.inject({ method: 'GET', url: '/v1/services/checkout/ruleset' })
    expect(set.json()).toMatchObject({
      revision: 3,
      rules: [{ id: 'after-1' }, { id: 'after-2' }, { id: 'after-3' }],
    })
  })
})
