import fc from 'fast-check'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import {
  createRulesService,
  openPgliteDb,
  RulesRepository,
  validateWithCore,
  type Db,
  type RulesServiceApp,
} from '@floodgate/rules-service'
import { TOKENS } from './helpers.js'

// A host keeps a set's body and sends its ETag back, so the two must name one state. Another
// writer commits at any moment of a read (before any one of its queries, as another instance on
// the same PostgreSQL does): every 200 a read answers carries the ETag of the body it sends, and
// a 304 the ETag the host sent.

type Read = 'ruleset' | 'rules' | 'rule' | 'service' | 'report'

const SERVICE = 'race'
const report = { host: 'web-1', intervalMs: 10_000, rules: [] }

describe('ETags and bodies of reads that race a write', () => {
  let db: Db
  let app: RulesServiceApp
  /** Commits a write before the read's `at`-th query, when armed. */
  let armed: { at: number } | undefined
  let limit = 1

  beforeAll(async () => {
    db = await openPgliteDb()
    const writer = new RulesRepository(db, validateWithCore)
    const racing: Db = {
      ...db,
      // As a PostgreSQL server: no revision cache, so every read asks the database, and a write
      // by another instance is seen only by the queries after it.
      kind: 'postgres',
      async query(sql, params) {
        if (armed !== undefined && --armed.at === 0) {
          armed = undefined
          await writer.replace(SERVICE, 'a', { id: 'a', limit: ++limit, window: '1m' }, 'other')
        }
        return db.query(sql, params)
      },
    }
    app = await createRulesService({
      db: racing,
      services: [SERVICE],
      tokens: [{ name: 'ops', role: 'admin', token: TOKENS.admin }],
    })
    await writer.replace(SERVICE, 'a', { id: 'a', limit, window: '1m' }, 'setup')
  }, 60_000)

  afterAll(async () => {
    await app?.close()
    await db?.close()
  })

  const read = (what: Read, ifNoneMatch: string | undefined) => {
    const headers = ifNoneMatch === undefined ? {} : { 'if-none-match': ifNoneMatch }
    const url = `/v1/services/${SERVICE}`
    switch (what) {
      case 'ruleset':
        return app.inject({ url: `${url}/ruleset`, headers })
      case 'rules':
        return app.inject({ url: `${url}/rules`, headers })
      case 'rule':
        return app.inject({ url: `${url}/rules/a`, headers })
      case 'service':
        return app.inject({ url, headers })
      case 'report':
        return app.inject({ method: 'POST', url: `${url}/report`, headers, payload: report })
    }
  }

  it('property: a 200 carries the ETag of its body, a 304 the one the host holds', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom<Read>('ruleset', 'rules', 'rule', 'service', 'report'),
        fc.integer({ min: 1, max: 3 }),
        fc.boolean(),
        async (what, at, conditional) => {
          const held = (await read('ruleset', undefined)).headers.etag as string
          armed = { at }
          const res = await read(what, conditional ? held : undefined)
          armed = undefined
          const what_ = `${what}, write before query ${at}, ${conditional ? 'If-None-Match' : 'plain'}`
          if (res.statusCode === 304) {
            expect(res.headers.etag, what_).toBe(held)
            return
          }
          expect(res.statusCode, what_).toBe(200)
          const body = res.json<{ version: string }>()
          expect(res.headers.etag, what_).toBe(`"${body.version}"`)
        },
      ),
      { numRuns: 100 },
    )
  })
})
