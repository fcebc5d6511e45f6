import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { adminServiceOnPostgres, postgresAvailable } from './helpers.js'

// Writers racing on one rule set over real HTTP and the real PostgreSQL: every write the service
// acknowledged (2xx) must be what the set holds at the revision it answered, a conditional write
// must succeed only on the version it read, and the audit trail replayed must give the final set.
const hasPostgres = await postgresAvailable()
const IDS = ['a', 'b', 'c'] as const

type Op =
  | { kind: 'put'; id: string; n: number; conditional: boolean }
  | { kind: 'patch'; id: string; n: number; conditional: boolean }
  | { kind: 'delete'; id: string; conditional: boolean }
  | { kind: 'post'; id: string; n: number }
  | { kind: 'put-all'; ids: string[]; n: number; conditional: boolean; viaBody: boolean }

const id = fc.constantFrom(...IDS)
const n = fc.integer({ min: 1, max: 9 })
const conditional = fc.boolean()
const op: fc.Arbitrary<Op> = fc.oneof(
  fc.record({ kind: fc.constant('put' as const), id, n, conditional }),
  fc.record({ kind: fc.constant('patch' as const), id, n, conditional }),
  fc.record({ kind: fc.constant('delete' as const), id, conditional }),
  fc.record({ kind: fc.constant('post' as const), id, n }),
  fc.record({
    kind: fc.constant('put-all' as const),
    ids: fc.uniqueArray(id, { maxLength: 3 }),
    n,
    conditional,
    // An import of a set read with GET: its `version` in the body is the condition.
    viaBody: fc.boolean(),
  }),
)

type RuleSet = Map<string, string>
interface AuditEntry {
  id: number
  ruleId: string | null
  revision: number
  after: { id: string; rate?: string } | string[] | null
}

describe.skipIf(!hasPostgres)('concurrent writers over HTTP and PostgreSQL', () => {
  const { call } = adminServiceOnPostgres('fg_rules_race')
  let round = 0

  it('property: no acknowledged write is lost, conditional writes need the version read, the audit replays to the set', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(op, { minLength: 1, maxLength: 8 }), async (ops) => {
        const service = `race-${round++}`
        const rules = `/v1/services/${service}/rules`
        expect((await call('PUT', `/v1/services/${service}`)).status).toBe(201)
        const start = await call('GET', `/v1/services/${service}/ruleset`)
        const read = start.etag!
        const results = await Promise.all(
          ops.map((o) => {
            const cond = 'conditional' in o && o.conditional ? read : undefined
            switch (o.kind) {
              case 'put':
                return call('PUT', `${rules}/${o.id}`, { rate: `${o.n}/1m` }, cond)
              case 'patch':
                return call('PATCH', `${rules}/${o.id}`, { rate: `${o.n}/1m` }, cond)
              case 'delete':
                return call('DELETE', `${rules}/${o.id}`, undefined, cond)
              case 'post':
                return call('POST', rules, { id: o.id, rate: `${o.n}/1m` })
              case 'put-all': {
                const set = { rules: o.ids.map((i) => ({ id: i, rate: `${o.n}/1m` })) }
                if (cond === undefined || !o.viaBody) return call('PUT', rules, set, cond)
                return call('PUT', rules, { ...set, version: JSON.parse(cond) as string })
              }
            }
          }),
        )
        // Replay the audit trail: the set at each revision.
        const audit = await call('GET', `/v1/services/${service}/audit?limit=500`)
        const entries = (audit.body as { entries: AuditEntry[] }).entries.reverse()
        const states = new Map<number, RuleSet>([[0, new Map()]])
        let set: RuleSet = new Map()
        for (const e of entries) {
          if (e.ruleId === null) {
            const order = e.after as string[]
            set = new Map(order.map((i) => [i, set.get(i)!]))
          } else if (e.after === null) set.delete(e.ruleId)
          else set.set(e.ruleId, (e.after as { rate: string }).rate)
          states.set(e.revision, new Map(set))
        }
        const final = await call('GET', `/v1/services/${service}/ruleset`)
        const finalSet = new Map(
          (final.body as { rules: { id: string; rate: string }[] }).rules.map((r) => [
            r.id,
            r.rate,
          ]),
        )
        expect([...finalSet]).toEqual([...set])
        expect(final.body).toMatchObject({ revision: entries.at(-1)?.revision ?? 0 })

        let conditionalWins = 0
        ops.forEach((o, i) => {
          const r = results[i]!
          const what = `${JSON.stringify(o)} → ${r.status} ${JSON.stringify(r.body)}`
          expect([200, 201, 404, 409, 412], what).toContain(r.status)
          if (r.status >= 300) {
            // A conditional write is refused only when the set moved since it was read.
            if (r.status === 412) expect(results.some((x) => x.status < 300)).toBe(true)
            return
          }
          const revision = (r.body as { revision: number }).revision
          const at = states.get(revision)
          expect(at, what).toBeDefined()
          if ('conditional' in o && o.conditional && revision > 0) conditionalWins++
          switch (o.kind) {
            case 'put':
            case 'patch':
            case 'post':
              expect(at!.get(o.id), what).toBe(`${o.n}/1m`)
              break
            case 'delete':
              expect(at!.has(o.id), what).toBe(false)
              break
            case 'put-all':
              expect([...at!], what).toEqual(o.ids.map((i) => [i, `${o.n}/1m`]))
              break
          }
        })
        // All conditional writes carried the same version: at most one can change the set.
        const changedConditional = ops.filter(
          (o, i) =>
            'conditional' in o &&
            o.conditional &&
            results[i]!.status < 300 &&
            (results[i]!.body as { revision: number }).revision > 0,
        )
        expect(changedConditional.length).toBeLessThanOrEqual(1)
        expect(conditionalWins).toBe(changedConditional.length)
      }),
      { numRuns: 25 },
    )
  })
})
