import { createServer, type Server, type Socket } from 'node:net'
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

// A PostgreSQL that does not answer: a lock nobody releases, or a server that accepted the
// connection and went silent. The service answers 503 within its databaseTimeoutMs instead of
// holding the request (and the connection) open without end.
const hasPostgres = await postgresAvailable()
const schema = uniqueSchema('fg_rules_hang')
const TIMEOUT_MS = 400

describe.skipIf(!hasPostgres)('when PostgreSQL does not answer', () => {
  let app: RulesServiceApp

  beforeAll(async () => {
    app = await createRulesService({
      databaseUrl: DATABASE_URL,
      databaseTimeoutMs: TIMEOUT_MS,
      schema,
      services: ['checkout'],
      tokens: [{ name: 'ops', role: 'admin', token: TOKENS.admin }],
    })
  })

  afterAll(async () => {
    await app?.close()
    await dropSchema(schema)
  })

  const putRule = (id: string) => putCheckoutRule(app, id)

  it('answers a write stuck behind a lock 503 once the timeout has passed, and stores nothing of it', async () => {
    const holder = new pg.Client({ connectionString: DATABASE_URL })
    await holder.connect()
    try {
      await holder.query('BEGIN')
      await holder.query(`SELECT 1 FROM ${schema}.services WHERE name = 'checkout' FOR UPDATE`)
      const res = await Promise.race([
        putRule('stuck'),
        new Promise<'hung'>((r) => setTimeout(() => r('hung'), TIMEOUT_MS + 4000)),
      ])
      expect(res).not.toBe('hung')
      if (res === 'hung') return
      expect(res.statusCode).toBe(503)
      expect(res.headers['content-type']).toMatch(/^application\/problem\+json/)
    } finally {
      await holder.query('ROLLBACK').catch(() => {})
      await holder.end()
    }
    expect((await putRule('after')).statusCode).toBe(201)
    const set = await app.inject({ method: 'GET', url: '/v1/services/checkout/ruleset' })
    expect(set.json()).toMatchObject({ revision: 1, rules: [{ id: 'after' }] })
  })
})

describe('a database server that accepts connections and never answers', () => {
  let server: Server
  const sockets = new Set<Socket>()
  let port = 0

  beforeAll(async () => {
    server = createServer((s) => {
      sockets.add(s)
      s.on('error', () => {})
    })
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
    port = (server.address() as { port: number }).port
  })

  afterAll(async () => {
    for (const s of sockets) s.destroy()
    await new Promise((r) => server.close(r))
  })

  it('fails the start within the timeout, naming no credentials, instead of hanging', async () => {
    const started = createRulesService({
      databaseUrl: `postgres://postgres:secret@127.0.0.1:${port}/test`,
      databaseTimeoutMs: TIMEOUT_MS,
    })
    const outcome = await Promise.race([
      started.then(
        async (app) => {
          await app.close()
          return 'started'
        },
        (err: unknown) => err,
      ),
      new Promise<'hung'>((r) => setTimeout(() => r('hung'), TIMEOUT_MS + 4000)),
    ])
    expect(outcome).toBeInstanceOf(Error)
    expect(String((outcome as Error).message)).not.toContain('secret')
  })

  it('refuses a timeout that is not a whole number of milliseconds, naming the option', async () => {
    await expect(
      createRulesService({
        databaseUrl: `postgres://127.0.0.1:${port}/test`,
        databaseTimeoutMs: 0,
      }),
    ).rejects.toThrow(/databaseTimeoutMs: expected a whole number of milliseconds/)
  })
})
