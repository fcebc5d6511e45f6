import fc from 'fast-check'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createRulesService, type RulesServiceApp } from '@floodgate/rules-service'
import { DATABASE_URL, TOKENS, dropSchema, postgresAvailable, uniqueSchema } from './helpers.js'
import { startPgProxy, type PgProxy } from './pg-proxy.js'

// PostgreSQL dropping the service's connection at COMMIT, through a TCP proxy on loopback:
// `before` the server gets the COMMIT (the transaction rolls back) or `after` it answered it (the
// transaction is committed, the service never hears so). The service answered both 503 "nothing
// of it stored", so after the second a client saw a refused write that every later read showed
// as stored. Model: a write changes the set exactly when it is answered 2xx; a write cut before
// its COMMIT is answered 503, one cut after it is answered as stored.
const hasPostgres = await postgresAvailable()
const schema = uniqueSchema('fg_rules_commit')
const SERVICE = 'checkout'

type Cut = 'none' | 'before' | 'after'
type Op =
  | { kind: 'put'; id: string; n: number; cut: Cut }
  | { kind: 'patch'; id: string; n: number; cut: Cut }
  | { kind: 'delete'; id: string; cut: Cut }

const id = fc.constantFrom('a', 'b', 'c')
const n = fc.integer({ min: 1, max: 99 })
const cut = fc.constantFrom<Cut>('none', 'before', 'after')
const op: fc.Arbitrary<Op> = fc.oneof(
  fc.record({ kind: fc.constant('put' as const), id, n, cut }),
  fc.record({ kind: fc.constant('patch' as const), id, n, cut }),
  fc.record({ kind: fc.constant('delete' as const), id, cut }),
)

describe.skipIf(!hasPostgres)('PostgreSQL dropping the connection at COMMIT', () => {
  let proxy: PgProxy
  let app: RulesServiceApp
  let base = ''

  beforeAll(async () => {
    proxy = await startPgProxy(DATABASE_URL)
    app = await createRulesService({
      databaseUrl: proxy.url,
      schema,
      services: [SERVICE],
      tokens: [{ name: 'ops', role: 'admin', token: TOKENS.admin }],
    })
    base = await app.listen({ port: 0, host: '127.0.0.1' })
  })
  afterAll(async () => {
    await app?.close()
    await proxy?.close()
    await dropSchema(schema)
  })

  const send = async (method: string, path: string, body?: unknown) => {
    const res = await fetch(`${base}/v1/services/${SERVICE}${path}`, {
      method,
      headers: {
        authorization: `Bearer ${TOKENS.admin}`,
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    })
    return { status: res.status, body: (await res.json()) as Record<string, unknown> }
  }
  const stored = async (): Promise<Record<string, string>> => {
    const set = await send('GET', '/ruleset')
    const rules = set.body.rules as { id: string; rate: string }[]
    return Object.fromEntries(rules.map((r) => [r.id, r.rate]))
  }

  it('a write whose COMMIT the server answered is answered as stored, not 503', async () => {
    proxy.cutAtNextCommit('after')
    const res = await send('PUT', '/rules/after-commit', { rate: '5/1m' })
    proxy.cutAtNextCommit(undefined)
    expect((await stored())['after-commit']).toBe('5/1m')
    expect(res.status).toBe(201)
  })

  it('a write cut before its COMMIT is answered 503 and stores nothing', async () => {
    proxy.cutAtNextCommit('before')
    const res = await send('PUT', '/rules/before-commit', { rate: '5/1m' })
    proxy.cutAtNextCommit(undefined)
    expect(res.status).toBe(503)
    expect((await stored())['before-commit']).toBeUndefined()
  })

  it('a write whose COMMIT was cut with the database gone says its outcome is unknown', async () => {
    proxy.cutAtNextCommit('after, then down')
    const res = await send('PUT', '/rules/unknown-outcome', { rate: '7/1m' })
    proxy.cutAtNextCommit(undefined)
    await proxy.restore()
    expect(res.status).toBe(503)
    expect(res.body.detail).toMatch(/could not be asked whether it was stored/)
    // It was committed: the server answered the COMMIT before the proxy cut.
    expect((await stored())['unknown-outcome']).toBe('7/1m')
  })

  it('property: a write changes the set exactly when it is answered 2xx (model)', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(op, { minLength: 1, maxLength: 6 }), async (ops) => {
        const model = new Map(Object.entries(await stored()))
        for (const o of ops) {
          proxy.cutAtNextCommit(o.cut === 'none' ? undefined : o.cut)
          const rate = 'n' in o ? `${o.n}/1m` : undefined
          const res =
            o.kind === 'put'
              ? await send('PUT', `/rules/${o.id}`, { rate })
              : o.kind === 'patch'
                ? await send('PATCH', `/rules/${o.id}`, { rate })
                : await send('DELETE', `/rules/${o.id}`)
          proxy.cutAtNextCommit(undefined)
          const exists = model.has(o.id)
          if (o.kind !== 'put' && !exists) {
            // Refused inside the transaction, which is rolled back: no COMMIT to cut.
            expect(res.status, JSON.stringify(o)).toBe(404)
          } else if (o.cut === 'before') {
            // Every other write ends with a COMMIT, one that changes nothing included.
            expect(res.status, JSON.stringify(o)).toBe(503)
          } else {
            expect(res.status, JSON.stringify(o)).toBeLessThan(300)
            if (o.kind === 'delete') model.delete(o.id)
            else model.set(o.id, rate!)
          }
          expect(await stored(), JSON.stringify(o)).toEqual(Object.fromEntries(model))
        }
      }),
      { numRuns: 25 },
    )
  })
})
