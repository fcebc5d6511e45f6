import { randomBytes } from 'node:crypto'
import { afterAll, beforeAll } from 'vitest'
import { createRulesService, type RulesServiceApp } from '@floodgate/rules-service'
import pg from 'pg'

/** The machine's PostgreSQL, as the brief names it. */
export const DATABASE_URL = process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test'
export const IS_CI = process.env.CI === 'true'

/** Is PostgreSQL reachable? Under CI a missing server is a failure, not a skip. */
export async function postgresAvailable(): Promise<boolean> {
  const client = new pg.Client({ connectionString: DATABASE_URL, connectionTimeoutMillis: 2000 })
  try {
    await client.connect()
    await client.query('SELECT 1')
    return true
  } catch (err) {
    if (IS_CI)
      throw new Error(
        `PostgreSQL is required under CI=true (${DATABASE_URL}): ${(err as Error).message}`,
      )
    return false
  } finally {
    await client.end().catch(() => {})
  }
}

/** A schema name unique to this test run, dropped afterwards. */
export function uniqueSchema(prefix = 'fg_rules_test'): string {
  return `${prefix}_${process.pid}_${randomBytes(4).toString('hex')}`
}

/** Drop a test schema and everything in it. */
export async function dropSchema(schema: string): Promise<void> {
  const client = new pg.Client({ connectionString: DATABASE_URL })
  await client.connect()
  try {
    await client.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`)
  } finally {
    await client.end()
  }
}

/**
 * Poll `condition` until it holds or the deadline passes (no fixed sleeps: a fast machine
 * finishes early, a slow one gets the whole budget).
 */
export async function waitFor(
  condition: () => boolean | Promise<boolean>,
  what: string,
  timeoutMs = 5000,
): Promise<void> {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    if (await condition()) return
    if (Date.now() > deadline)
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`)
    await new Promise((resolve) => setTimeout(resolve, 20))
  }
}

export const TOKENS = {
  admin: 'admin-token-0123456789abcdef',
  checkout: 'checkout-writer-token-0123456789',
  reader: 'reader-token-0123456789abcdef',
} as const

/** PUT a small rule under `checkout` with the admin token: a write that takes the service's row lock. */
export function putCheckoutRule(app: RulesServiceApp, id: string) {
  return app.inject({
    method: 'PUT',
    url: `/v1/services/checkout/rules/${id}`,
    headers: { authorization: `Bearer ${TOKENS.admin}` },
    payload: { rate: '5/1m' },
  })
}

/**
 * A rules service on the machine's PostgreSQL in its own schema, listening on loopback for the
 * describe block that calls this (started before its tests, closed and its schema dropped
 * after), and `call`, an admin's request to it.
 */
export function adminServiceOnPostgres(schemaPrefix: string) {
  const schema = uniqueSchema(schemaPrefix)
  let app: RulesServiceApp | undefined
  let base = ''
  beforeAll(async () => {
    app = await createRulesService({
      databaseUrl: DATABASE_URL,
      schema,
      tokens: [{ name: 'ops', role: 'admin', token: TOKENS.admin }],
      logger: false,
    })
    base = await app.listen({ port: 0, host: '127.0.0.1' })
  })
  afterAll(async () => {
    await app?.close()
    await dropSchema(schema)
  })
  const call = async (
    method: string,
    path: string,
    body?: unknown,
    ifMatch?: string,
    more: Record<string, string | undefined> = {},
  ) => {
    const extra = Object.entries(more).filter((e): e is [string, string] => e[1] !== undefined)
    const res = await fetch(`${base}${path}`, {
      method,
      headers: {
        authorization: `Bearer ${TOKENS.admin}`,
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
        ...(ifMatch === undefined ? {} : { 'if-match': ifMatch }),
        ...Object.fromEntries(extra),
      },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    })
    const text = await res.text()
    return { status: res.status, etag: res.headers.get('etag'), body: text ? JSON.parse(text) : {} }
  }
  return { call }
}
