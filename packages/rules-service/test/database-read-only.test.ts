import { randomBytes } from 'node:crypto'
import pg from 'pg'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createRulesService, type RulesServiceApp } from '@floodgate/rules-service'
import { DATABASE_URL, TOKENS, postgresAvailable, putCheckoutRule, waitFor } from './helpers.js'

// A failover that leaves the service's address on a server that takes no writes (a standby,
// or a primary switched to read-only): every write fails with SQLSTATE 25006. That is the
// database being unavailable for writes, as during a restart, so the write answers 503 with
// Retry-After, not a 500 "the service failed"; reads go on; once writes are taken again the
// service writes without a restart. Simulated on a database of this test's own, switched to
// read-only and back, with the service's connections ended so it reconnects.
const hasPostgres = await postgresAvailable()
const database = `fg_rules_ro_${process.pid}_${randomBytes(3).toString('hex')}`
const appName = `floodgate_ro_${process.pid}`

describe.skipIf(!hasPostgres)('PostgreSQL taking no writes (a failover onto a standby)', () => {
  let app: RulesServiceApp
  const admin = new pg.Client({ connectionString: DATABASE_URL })
  const url = new URL(DATABASE_URL)
  url.pathname = `/${database}`
  url.searchParams.set('application_name', appName)

  /** Switch the database, and end the service's connections so new ones see the switch. */
  const readOnly = async (on: boolean): Promise<void> => {
    await admin.query(
      `ALTER DATABASE ${database} SET default_transaction_read_only = ${on ? 'on' : 'off'}`,
    )
    await admin.query(
      'SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = $1',
      [appName],
    )
    // The pool drops each ended connection as it notices; reads work in both modes.
    await waitFor(
      async () => (await app.inject({ url: '/healthz' })).statusCode === 200,
      'the service to reconnect',
    )
  }

  beforeAll(async () => {
    await admin.connect()
    await admin.query(`CREATE DATABASE ${database}`)
    app = await createRulesService({
      databaseUrl: url.toString(),
      services: ['checkout'],
      tokens: [{ name: 'ops', role: 'admin', token: TOKENS.admin }],
    })
  })

  afterAll(async () => {
    await app?.close()
    await admin.query(`DROP DATABASE IF EXISTS ${database} WITH (FORCE)`).catch(() => {})
    await admin.end()
  })

  it('answers writes 503 with Retry-After, serves reads, and writes again once it may', async () => {
    expect((await putCheckoutRule(app, 'before')).statusCode).toBe(201)
    await readOnly(true)
    const refused = await putCheckoutRule(app, 'during')
    expect(refused.statusCode).toBe(503)
    expect(refused.headers['retry-after']).toBeDefined()
    expect(refused.json()).toMatchObject({ status: 503 })
    const read = await app.inject({ method: 'GET', url: '/v1/services/checkout/ruleset' })
    expect(read.statusCode).toBe(200)
    expect(read.json()).toMatchObject({ revision: 1, rules: [{ id: 'before' }] })
    await readOnly(false)
    expect((await putCheckoutRule(app, 'after')).statusCode).toBe(201)
    const set = await app.inject({ method: 'GET', url: '/v1/services/checkout/ruleset' })
    expect(set.json()).toMatchObject({ revision: 2, rules: [{ id: 'before' }, { id: 'after' }] })
  })
})
