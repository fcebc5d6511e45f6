import fc from 'fast-check'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import {
  createRulesService,
  openPgliteDb,
  type Db,
  type RulesServiceApp,
} from '@floodgate/rules-service'
import { TOKENS } from './helpers.js'

// PGlite keeps every service's revision in memory, so a current host's poll (a 304) runs no
// query. The cache must be exact: after any sequence of writes — through either of two
// services sharing one database, successful, refused, conflicting or changing nothing — every
// poll answers exactly what a service without the cache answers (status, ETag and body), for
// every If-None-Match a host could send.

type Op =
  | { kind: 'post' | 'put' | 'patch'; id: string; limit: number; via: number; stale: boolean }
  | { kind: 'delete'; id: string; via: number; stale: boolean }
  | { kind: 'put-all'; ids: string[]; limit: number; via: number; stale: boolean }
  | { kind: 'invalid'; id: string; via: number }
  | { kind: 'create-service'; via: number }

const IDS = ['a', 'b', 'c']
const id = fc.constantFrom(...IDS)
const limit = fc.integer({ min: 1, max: 2 })
const via = fc.integer({ min: 0, max: 1 })
// A stale write sends If-Match of an older state (or none existed yet): 412, nothing written.
const stale = fc.boolean()
const op: fc.Arbitrary<Op> = fc.oneof(
  fc.record({ kind: fc.constantFrom('post', 'put', 'patch'), id, limit, via, stale }),
  fc.record({ kind: fc.constant('delete'), id, via, stale }),
  // Any subset in any order: reorders (a revision with only a reorder entry), inserts, deletes.
  fc.record({ kind: fc.constant('put-all'), ids: fc.shuffledSubarray(IDS), limit, via, stale }),
  fc.record({ kind: fc.constant('invalid'), id, via }),
  fc.record({ kind: fc.constant('create-service'), via }),
)

describe('the revision cache (PGlite)', () => {
  let db: Db
  // Two services on one database (as an admin page's service and another built on the same
  // `db`), and one on the same database that never caches: the reference.
  let cached: RulesServiceApp[]
  let uncached: RulesServiceApp
  let serviceCounter = 0

  beforeAll(async () => {
    db = await openPgliteDb()
    const tokens = [{ name: 'ops', role: 'admin' as const, token: TOKENS.admin }]
    cached = [await createRulesService({ db, tokens }), await createRulesService({ db, tokens })]
    // The cache is keyed by the database handle and kept only for PGlite: a handle that says
    // it is a PostgreSQL server asks the database on every poll.
    uncached = await createRulesService({ db: { ...db, kind: 'postgres' }, tokens })
  }, 60_000)

  afterAll(async () => {
    for (const app of [...(cached ?? []), uncached]) await app?.close()
    await db?.close()
  })

  const auth = { authorization: `Bearer ${TOKENS.admin}` }

  async function write(service: string, o: Op, older: string): Promise<void> {
    const app = cached[o.via]!
    const base = `/v1/services/${service}`
    const ifMatch = 'stale' in o && o.stale ? { 'if-match': older } : {}
    const headers = { ...auth, ...ifMatch }
    const rule = (i: string, l: number) => ({ id: i, limit: l, window: '1m' })
    switch (o.kind) {
      case 'post':
        await app.inject({
          method: 'POST',
          url: `${base}/rules`,
          headers,
          payload: rule(o.id, o.limit),
        })
        return
      case 'put':
        await app.inject({
          method: 'PUT',
          url: `${base}/rules/${o.id}`,
          headers,
          payload: rule(o.id, o.limit),
        })
        return
      case 'patch':
        await app.inject({
          method: 'PATCH',
          url: `${base}/rules/${o.id}`,
          headers: { ...headers, 'content-type': 'application/merge-patch+json' },
          payload: JSON.stringify({ limit: o.limit }),
        })
        return
      case 'delete':
        await app.inject({ method: 'DELETE', url: `${base}/rules/${o.id}`, headers })
        return
      case 'put-all':
        await app.inject({
          method: 'PUT',
          url: `${base}/rules`,
          headers,
          payload: { rules: o.ids.map((i) => rule(i, o.limit)) },
        })
        return
      case 'invalid':
        // Refused whole (400) inside the write's transaction: nothing may move.
        await app.inject({
          method: 'PUT',
          url: `${base}/rules/${o.id}`,
          headers,
          payload: { id: o.id, limit: -1, window: '1m' },
        })
        return
      case 'create-service':
        await app.inject({ method: 'PUT', url: base, headers })
        return
    }
  }

  /** Every poll a host could send, answered by each cached service and by the reference. */
  async function expectSamePolls(service: string, older: string[]): Promise<string> {
    const truth = await uncached.inject({ url: `/v1/services/${service}/ruleset` })
    expect(truth.statusCode).toBe(200)
    const { revision, version } = JSON.parse(truth.body) as { revision: number; version: string }
    // Straight from the table, past every cache.
    const [row] = await db.query<{ revision: unknown; tag: unknown }>(
      'SELECT revision, tag FROM services WHERE name = $1',
      [service],
    )
    expect(`${Number(row!.revision)}-${String(row!.tag)}`).toBe(version)
    const etag = `"${version}"`
    const tags = [
      undefined,
      etag,
      ...older.slice(-2),
      `"${revision}"`,
      `"${revision + 1}-${String(row!.tag)}"`,
      `W/${etag}`,
      '*',
    ]
    for (const tag of tags) {
      const headers = tag === undefined ? {} : { 'if-none-match': tag }
      const want = await uncached.inject({ url: `/v1/services/${service}/ruleset`, headers })
      for (const app of cached) {
        const got = await app.inject({ url: `/v1/services/${service}/ruleset`, headers })
        expect({ tag, status: got.statusCode, etag: got.headers.etag, body: got.body }).toEqual({
          tag,
          status: want.statusCode,
          etag: want.headers.etag,
          body: want.body,
        })
      }
    }
    return etag
  }

  it('answers every poll as a service without the cache does, after any writes', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(op, { minLength: 1, maxLength: 10 }), async (ops) => {
        const service = `cache-${++serviceCounter}`
        // Polled before it exists (a 404 must not be cached), then created.
        for (const app of [...cached, uncached]) {
          expect((await app.inject({ url: `/v1/services/${service}/ruleset` })).statusCode).toBe(
            404,
          )
        }
        const created = await cached[serviceCounter % 2]!.inject({
          method: 'PUT',
          url: `/v1/services/${service}`,
          headers: auth,
        })
        expect(created.statusCode).toBe(201)
        // Every ETag the service has answered, oldest first.
        const seen = [await expectSamePolls(service, [])]
        for (const o of ops) {
          // Stale: the state before the current one (or, with none yet, one that never was).
          await write(service, o, seen.at(-2) ?? '"0-0"')
          const etag = await expectSamePolls(service, seen)
          if (etag !== seen.at(-1)) seen.push(etag)
        }
      }),
      { numRuns: 40 },
    )
  }, 120_000)
})
