import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { adminServiceOnPostgres, postgresAvailable } from './helpers.js'

// A refused request names every part at fault, not only the first one checked: a whole-set
// PUT whose envelope had an unknown field named only that field, and not the rules' problems;
// a rule whose id differed from the URL's and had a bad limit named only the limit; an audit
// query with a bad limit and a bad cursor named only the limit. Modelled here: each request is
// built from independent faults, each of which must be named by an entry of `errors` (and no
// entry names a fault that is not there), over real HTTP and the real PostgreSQL; a refused
// write changes nothing.
const hasPostgres = await postgresAvailable()

const SERVICE = 'checkout'
const good = (id: string) => ({ id, rate: '10/1m' })

/** A fault of one rule of a set, and the pattern of the entry that must name it. */
type RuleFault = 'none' | 'not an object' | 'bad limit' | 'bad window' | 'unknown field' | 'twice'
const ruleFaults: readonly RuleFault[] = [
  'none',
  'not an object',
  'bad limit',
  'bad window',
  'unknown field',
  'twice',
]

function ruleWith(fault: RuleFault, i: number): unknown {
  switch (fault) {
    case 'none':
      return good(`r${i}`)
    case 'not an object':
      return [5, null, 'rule', 7][i % 4]
    case 'bad limit':
      return { id: `r${i}`, limit: -1, window: '1m' }
    case 'bad window':
      return { id: `r${i}`, limit: 5, window: 'NaN' }
    case 'unknown field':
      return { ...good(`r${i}`), colour: 'red' }
    case 'twice':
      // The id of the set's first rule, which is always a good one.
      return good('r0')
  }
}

function ruleFaultPattern(fault: RuleFault, i: number): RegExp | undefined {
  const at = `^rules\\[${i}\\]`
  switch (fault) {
    case 'none':
      return undefined
    case 'not an object':
      return new RegExp(`${at}: `)
    case 'bad limit':
      return new RegExp(`${at}\\.limit: `)
    case 'bad window':
      return new RegExp(`${at}\\.window: `)
    case 'unknown field':
      return new RegExp(`${at}\\.colour: `)
    case 'twice':
      return new RegExp(`${at}\\.id: duplicate id "r0"`)
  }
}

const envelope = fc.record({
  unknownField: fc.boolean(),
  rulesNotAList: fc.boolean(),
  otherService: fc.boolean(),
  versionNotString: fc.boolean(),
  revisionAlone: fc.boolean(),
})

/** Each entry of `errors` is matched by exactly one expected pattern, and each pattern used. */
function expectNamed(errors: unknown, patterns: readonly RegExp[]): void {
  expect(Array.isArray(errors), JSON.stringify(errors)).toBe(true)
  const list = errors as string[]
  for (const pattern of patterns) {
    expect(
      list.filter((e) => pattern.test(e)),
      `${String(pattern)} in ${JSON.stringify(list)}`,
    ).toHaveLength(1)
  }
  for (const entry of list) {
    expect(
      patterns.some((p) => p.test(entry)),
      `${entry} names no fault`,
    ).toBe(true)
  }
}

describe.skipIf(!hasPostgres)('every part at fault is named in one 400', () => {
  const { call } = adminServiceOnPostgres('fg_rules_issues')

  it('a whole-set PUT names each envelope field and each rule at fault (model), and writes nothing', async () => {
    await call('PUT', `/v1/services/${SERVICE}`)
    const seeded = await call('PUT', `/v1/services/${SERVICE}/rules`, { rules: [good('kept')] })
    expect(seeded.status).toBe(200)
    await fc.assert(
      fc.asyncProperty(
        envelope,
        fc.array(fc.constantFrom(...ruleFaults), { minLength: 0, maxLength: 6 }),
        async (env, faults) => {
          const rules = [good('r0'), ...faults.map((f, i) => ruleWith(f, i + 1))]
          const body: Record<string, unknown> = { rules: env.rulesNotAList ? 'r0' : rules }
          const patterns: RegExp[] = []
          if (env.unknownField) {
            body.force = true
            patterns.push(/unknown field.*"force"/)
          }
          if (env.rulesNotAList) patterns.push(/^rules: expected an array/)
          else
            faults.forEach((f, i) => {
              const p = ruleFaultPattern(f, i + 1)
              if (p !== undefined) patterns.push(p)
            })
          if (env.otherService) {
            body.service = 'search'
            patterns.push(/^service: /)
          }
          if (env.versionNotString) {
            body.version = 7
            patterns.push(/^version: /)
          } else if (env.revisionAlone) {
            body.revision = 3
            patterns.push(/^revision: /)
          }
          fc.pre(patterns.length > 0)
          const res = await call('PUT', `/v1/services/${SERVICE}/rules`, body)
          expect(res.status).toBe(400)
          expectNamed(res.body.errors, patterns)
          // The detail says the same, for a reader of the body alone.
          for (const entry of res.body.errors as string[]) expect(res.body.detail).toContain(entry)
          const set = await call('GET', `/v1/services/${SERVICE}/ruleset`)
          expect(set.body.rules).toEqual([good('kept')])
          expect(set.etag).toBe(seeded.etag)
        },
      ),
      { numRuns: 60 },
    )
  })

  it('a rule PUT names an id that differs from the URL together with its other faults', async () => {
    await call('PUT', `/v1/services/${SERVICE}`)
    const before = await call('GET', `/v1/services/${SERVICE}/ruleset`)
    await fc.assert(
      fc.asyncProperty(
        fc.record({
          otherId: fc.boolean(),
          badLimit: fc.boolean(),
          badWindow: fc.boolean(),
          unknownField: fc.boolean(),
        }),
        fc.constantFrom('PUT', 'PATCH'),
        async (f, method) => {
          const body: Record<string, unknown> = { limit: 5, window: '1m' }
          const patterns: RegExp[] = []
          if (f.otherId) {
            body.id = 'other'
            patterns.push(/^rules\[0\]\.id: the body's id "other" differs from the URL's "kept"/)
          }
          if (f.badLimit) {
            body.limit = 'NaN'
            patterns.push(/^rules\[0\]\.limit: /)
          }
          if (f.badWindow) {
            body.window = '-0s'
            patterns.push(/^rules\[0\]\.window: /)
          }
          if (f.unknownField) {
            body.colour = 'red'
            patterns.push(/^rules\[0\]\.colour: /)
          }
          fc.pre(patterns.length > 0)
          // A patch of the good rule `kept` ({ rate }) must also drop its rate to take a limit.
          const sent = method === 'PATCH' ? { ...body, rate: null } : body
          const res = await call(method, `/v1/services/${SERVICE}/rules/kept`, sent)
          expect(res.status).toBe(400)
          expectNamed(res.body.errors, patterns)
          const set = await call('GET', `/v1/services/${SERVICE}/ruleset`)
          expect(set.etag).toBe(before.etag)
        },
      ),
      { numRuns: 40 },
    )
  })

  it('an audit query names each parameter at fault', async () => {
    await call('PUT', `/v1/services/${SERVICE}`)
    await fc.assert(
      fc.asyncProperty(
        fc.record({
          badLimit: fc.boolean(),
          badBefore: fc.boolean(),
          unknown: fc.boolean(),
          emptyRule: fc.boolean(),
        }),
        async (f) => {
          const query = new URLSearchParams()
          const patterns: RegExp[] = []
          if (f.badLimit) {
            query.set('limit', '0')
            patterns.push(/^limit: /)
          }
          if (f.badBefore) {
            query.set('before', 'NaN')
            patterns.push(/^before: /)
          }
          if (f.unknown) {
            query.set('page', '2')
            patterns.push(/^unknown query parameter\(s\): page/)
          }
          if (f.emptyRule) {
            query.set('rule', '')
            patterns.push(/^rule: expected a rule id/)
          }
          fc.pre(patterns.length > 0)
          const res = await call('GET', `/v1/services/${SERVICE}/audit?${query.toString()}`)
          expect(res.status).toBe(400)
          expectNamed(res.body.errors, patterns)
        },
      ),
      { numRuns: 20 },
    )
  })

  it("a host's report names each field at fault", async () => {
    await call('PUT', `/v1/services/${SERVICE}`)
    const res = await call('POST', `/v1/services/${SERVICE}/report`, {
      host: '-bad',
      intervalMs: 0,
      rules: [{ id: 'a', counts: { allowed: -1 } }],
    })
    expect(res.status).toBe(400)
    expectNamed(res.body.errors, [/^host: /, /^intervalMs: /, /^rules\[0\]\.counts\.allowed: /])
  })
})
