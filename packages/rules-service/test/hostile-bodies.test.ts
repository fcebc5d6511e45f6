import fc from 'fast-check'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import {
  createRulesService,
  openPgliteDb,
  type Db,
  type RulesServiceApp,
} from '@floodgate/rules-service'
import { DATABASE_URL, TOKENS, dropSchema, postgresAvailable, uniqueSchema } from './helpers.js'

// Arbitrary JSON to every write route, on embedded PGlite and on a PostgreSQL server: no body
// may reach a 5xx. Strings PostgreSQL cannot store (U+0000, unpaired surrogates) and nesting too
// deep to walk must be refused with a 400 problem whose detail names the field's JSON path.
const hasPostgres = await postgresAvailable()
const pgSchema = uniqueSchema('fg_rules_hostile')
const SERVICE = 'checkout'

const UNSTORABLE = ['\u0000', '\uD800', '\uDFFF', '\uDC00\uD800', 'a\u0000b', 'x\uDBFFy']
/** Strings that are sometimes storable and sometimes not, in any position of a string. */
const nastyString = fc.oneof(
  fc.string(),
  fc.constantFrom(...UNSTORABLE),
  fc.string({ unit: fc.constantFrom('a', 'é', '\u0000', '\uD800', '\uDC00', '😀') }),
)
/** JSON values whose strings and keys may be unstorable. */
const json: fc.Arbitrary<unknown> = fc.letrec<{ value: unknown }>((tie) => ({
  value: fc.oneof(
    { maxDepth: 4 },
    fc.constant(null),
    fc.boolean(),
    fc.double({ noNaN: true, noDefaultInfinity: true }),
    nastyString,
    fc.array(tie('value'), { maxLength: 4 }),
    fc.dictionary(nastyString, tie('value'), { maxKeys: 4 }),
  ),
})).value
/** A rule core accepts, so the strings in it reach the database unless refused first. */
const validRule = fc.record({
  id: nastyString.filter((s) => s.length > 0),
  limit: fc.integer({ min: 1, max: 100 }),
  window: fc.constant('1m'),
  description: nastyString,
  match: fc.oneof(
    fc.constant('/api/**'),
    nastyString.map((s) => `/api/${s}`),
  ),
})
/** Nested `depth` levels deep, as an object chain or an array chain. */
const deep = fc
  .record({ depth: fc.integer({ min: 33, max: 20_000 }), arrays: fc.boolean() })
  .map(({ depth, arrays }) =>
    arrays
      ? `{"id":"x","limit":1,"window":"1m","description":${'['.repeat(depth)}${']'.repeat(depth)}}`
      : `${'{"a":'.repeat(depth)}1${'}'.repeat(depth)}`,
  )

const body = fc.oneof(
  fc.jsonValue({ maxDepth: 4 }).map((v) => JSON.stringify(v)),
  json.map((v) => JSON.stringify(v)),
  validRule.map((r) => JSON.stringify(r)),
  fc.array(validRule, { maxLength: 3 }).map((rules) => JSON.stringify({ rules })),
  deep,
)

interface Route {
  method: 'POST' | 'PUT' | 'PATCH' | 'DELETE'
  url: string
  type: string
}
const routes: Route[] = [
  { method: 'POST', url: `/v1/services/${SERVICE}/rules`, type: 'application/json' },
  { method: 'PUT', url: `/v1/services/${SERVICE}/rules`, type: 'application/json' },
  { method: 'PUT', url: `/v1/services/${SERVICE}/rules/x`, type: 'application/json' },
  { method: 'PATCH', url: `/v1/services/${SERVICE}/rules/x`, type: 'application/merge-patch+json' },
  { method: 'DELETE', url: `/v1/services/${SERVICE}/rules/y`, type: 'application/json' },
  { method: 'PUT', url: '/v1/services/other', type: 'application/json' },
]

/** The reference: does any string or key hold U+0000 or an unpaired surrogate? */
function containsUnstorable(value: unknown, depth = 0): boolean {
  const bad = (s: string) =>
    [...s].some((c) => c === '\u0000' || (c.length === 1 && c >= '\uD800' && c <= '\uDFFF'))
  if (typeof value === 'string') return bad(value)
  if (value === null || typeof value !== 'object' || depth > 8) return false
  return Object.entries(value).some(([k, v]) => bad(k) || containsUnstorable(v, depth + 1))
}

for (const backend of [
  { name: 'PGlite', skip: false },
  { name: 'PostgreSQL', skip: !hasPostgres },
]) {
  describe.skipIf(backend.skip)(`hostile bodies on ${backend.name}`, () => {
    let app: RulesServiceApp
    let db: Db | undefined

    beforeAll(async () => {
      db = backend.name === 'PGlite' ? await openPgliteDb() : undefined
      app = await createRulesService({
        ...(db ? { db } : { databaseUrl: DATABASE_URL, schema: pgSchema }),
        services: [SERVICE],
        tokens: [{ name: 'ops', role: 'admin', token: TOKENS.admin }],
      })
    })
    afterAll(async () => {
      await app?.close()
      await db?.close()
      if (backend.name === 'PostgreSQL') await dropSchema(pgSchema)
    })

    const send = (route: Route, payload: string) =>
      app.inject({
        method: route.method,
        url: route.url,
        headers: { authorization: `Bearer ${TOKENS.admin}`, 'content-type': route.type },
        payload,
      })

    /** Put rule `x` back, so PATCH always has a rule to merge into. */
    const resetRuleX = async () => {
      const res = await send(routes[2]!, JSON.stringify({ id: 'x', limit: 1, window: '1m' }))
      expect(res.statusCode).toBeLessThan(300)
    }

    it('answers any JSON body to any write route without a 5xx, errors as problems', async () => {
      await resetRuleX()
      await fc.assert(
        fc.asyncProperty(fc.constantFrom(...routes), body, async (route, payload) => {
          const res = await send(route, payload)
          expect(
            res.statusCode,
            `${route.method} ${route.url} ${payload.slice(0, 200)}`,
          ).toBeLessThan(500)
          if (res.statusCode >= 400) {
            expect(res.headers['content-type']).toMatch(/^application\/problem\+json/)
            const problem = res.json<{ status: number; detail: string }>()
            expect(problem.status).toBe(res.statusCode)
          }
          // A `__proto__` key is refused by the JSON parser first, as malformed JSON.
          if (!/__proto__|constructor/.test(payload)) {
            if (containsUnstorable(JSON.parse(payload))) {
              expect(res.statusCode, payload).toBe(400)
              // The path is `body` then `.name` or `[index]` / `["any key"]` steps (a key may hold spaces).
              expect(res.json<{ detail: string }>().detail).toMatch(
                /^body(?:\.[\w$]+|\[(?:\d+|"(?:[^"\\]|\\.)*")\])*: (the key )?contains/,
              )
            }
          }
          if (route.method === 'PUT' && route.url.endsWith('/rules')) await resetRuleX()
        }),
        { numRuns: 300 },
      )
    }, 240_000)

    // JSON.parse keeps the last of a key given twice (`{"rules":[…],"rules":[]}` emptied the
    // set; `{"limit":5,"limit":5000}` stored 5000). Such a body is refused, naming the key, and
    // nothing is stored, wherever in the body the key repeats.
    it('refuses a body that gives a key twice in one object, naming it, storing nothing', async () => {
      await resetRuleX()
      const ruleset = async () =>
        (await app.inject({ url: `/v1/services/${SERVICE}/ruleset` })).body
      const before = await ruleset()
      const isSet = (route: Route) => route.method === 'PUT' && route.url.endsWith('/rules')
      await fc.assert(
        fc.asyncProperty(
          fc.constantFrom(...routes.slice(0, 4)),
          fc.constantFrom(
            ['{"id":"x","window":"1m","limit":5,"limit":5000}', 'limit'],
            ['{"id":"x","limit":5,"window":"1m","w\\u0069ndow":"1s"}', 'window'],
            [
              '{"id":"x","rate":"1/s","match":{"headers":{"x-a":"1","x-a":"2"}}}',
              'match.headers["x-a"]',
            ],
          ),
          async (route, [rule, path]) => {
            const res = await send(route, isSet(route) ? `{"rules":[${rule}]}` : rule)
            expect(res.statusCode, `${route.method} ${route.url} ${rule}`).toBe(400)
            const problem = res.json<{ type: string; detail: string }>()
            expect(problem.type).toMatch(/#problem-invalid-json$/)
            expect(problem.detail).toBe(
              `body${isSet(route) ? '.rules[0]' : ''}.${path}: given twice in one object (which value counts would depend on the parser); give each key once`,
            )
            expect(await ruleset()).toBe(before)
          },
        ),
      )
      const emptied = await send(routes[1]!, '{"rules":[{"id":"x","rate":"1/s"}],"rules":[]}')
      expect(emptied.json<{ detail: string }>().detail).toMatch(/^body\.rules: given twice/)
      expect(await ruleset()).toBe(before)
    })

    // Bytes that are not UTF-8 (what Latin-1 or Windows-1252 writes for 'é', a cut sequence,
    // an encoded surrogate) were read as U+FFFD and stored: a header value or a description
    // other than the one sent, without a word. They are refused, naming where they are, and a
    // body declared in another charset is refused before it is read.
    it('refuses bodies that are not UTF-8, and other charsets, storing nothing', async () => {
      await resetRuleX()
      const revision = async () =>
        (await app.inject({ url: `/v1/services/${SERVICE}/ruleset` })).json<{ revision: number }>()
          .revision
      const before = await revision()
      const notUtf8 = fc.constantFrom([0xe9], [0x80], [0xc3], [0xe2, 0x82], [0xed, 0xa0, 0x80])
      const text = fc.string({ unit: fc.constantFrom('a', 'é', '\uFFFD', ' ', '😀'), maxLength: 8 })
      await fc.assert(
        fc.asyncProperty(
          fc.constantFrom(...routes.slice(0, 4)),
          text,
          notUtf8,
          text,
          async (route, head, bad, tail) => {
            const prefix = `{"id":"x","limit":2,"window":"1m","match":{"headers":{"x-city":"${head}`
            const payload = Buffer.concat([
              Buffer.from(
                route.url.endsWith('/rules') && route.method === 'PUT'
                  ? `{"rules":[${prefix}`
                  : prefix,
              ),
              Buffer.from(bad),
              Buffer.from(
                `${tail}"}}}${route.url.endsWith('/rules') && route.method === 'PUT' ? ']}' : ''}`,
              ),
            ])
            const res = await send(route, payload as unknown as string)
            expect(res.statusCode).toBe(400)
            const at =
              Buffer.byteLength(prefix) +
              (route.method === 'PUT' && route.url.endsWith('/rules') ? 10 : 0)
            expect(res.json<{ type: string; detail: string }>()).toMatchObject({
              type: expect.stringMatching(/#problem-invalid-json$/),
              detail: expect.stringMatching(
                new RegExp(`^the body is not valid UTF-8 at line 1, column \\d+ \\(byte ${at}\\)$`),
              ),
            })
          },
        ),
        { numRuns: 100 },
      )
      const spellings = [
        'utf-8',
        'UTF-8',
        '"utf-8"',
        'utf8',
        'iso-8859-1',
        'latin1',
        'windows-1252',
        'utf-16',
      ]
      for (const charset of spellings) {
        const res = await app.inject({
          method: 'PUT',
          url: `/v1/services/${SERVICE}/rules/x`,
          headers: {
            authorization: `Bearer ${TOKENS.admin}`,
            'content-type': `application/json; charset=${charset}`,
          },
          payload: Buffer.from(
            JSON.stringify({ limit: 1, window: '1m', description: 'café' }),
            'latin1',
          ),
        })
        if (/utf-?8/i.test(charset)) {
          expect(res.statusCode, charset).toBe(400)
        } else {
          expect(res.statusCode, charset).toBe(415)
          expect(res.json<{ detail: string }>().detail).toContain(
            `charset=${charset.toLowerCase()}:`,
          )
        }
      }
      expect(await revision()).toBe(before)
    })

    it('names the field that holds the unstorable string, or the depth', async () => {
      await resetRuleX()
      const detail = async (route: Route, payload: unknown) => {
        const res = await send(
          route,
          typeof payload === 'string' ? payload : JSON.stringify(payload),
        )
        expect(res.statusCode).toBe(400)
        return res.json<{ detail: string }>().detail
      }
      expect(await detail(routes[0]!, { id: 'a\u0000', limit: 1, window: '1m' })).toBe(
        'body.id: contains U+0000 (NUL), which PostgreSQL cannot store',
      )
      expect(
        await detail(routes[1]!, {
          rules: [{ id: 'a', limit: 1, window: '1m', description: 'ok \uD83D' }],
        }),
      ).toMatch(/^body\.rules\[0\]\.description: contains an unpaired UTF-16 surrogate \(U\+D83D\)/)
      expect(await detail(routes[3]!, { 'we\u0000ird': 1 })).toMatch(
        /^body\["we\\u0000ird"\]: the key contains U\+0000/,
      )
      const patch = `${'{"description":'.repeat(40)}"x"${'}'.repeat(40)}`
      expect(await detail(routes[3]!, patch)).toMatch(
        /^body(\.description){32}: nested deeper than 32 levels/,
      )
      const url = await app.inject({
        url: `/v1/services/${SERVICE}/audit?rule=a%00b`,
        headers: { authorization: `Bearer ${TOKENS.admin}` },
      })
      expect(url.statusCode).toBe(400)
      expect(url.json<{ detail: string }>().detail).toMatch(/^query\.rule: contains U\+0000/)
      const set = await app.inject({ url: `/v1/services/${SERVICE}/ruleset` })
      expect(set.json<{ rules: { id: string }[] }>().rules.map((r) => r.id)).toContain('x')
    })
  })
}
