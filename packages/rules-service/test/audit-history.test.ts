import fc from 'fast-check'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import {
  createRulesService,
  openPgliteDb,
  type AuditEntry,
  type Db,
  type RulesServiceApp,
} from '@floodgate/rules-service'
import { DATABASE_URL, TOKENS, dropSchema, postgresAvailable, uniqueSchema } from './helpers.js'

// Any sequence of writes, through the HTTP API, against a plain array as the reference model:
// the service's set and revision follow the model after every write, a revision is bumped
// exactly when the set changed, every revision has audit entries and every entry a revision,
// and replaying the audit trail from the empty set rebuilds the set at every revision — order
// included, so a write that only moves rules cannot slip through without an entry.
const hasPostgres = await postgresAvailable()
const pgSchema = uniqueSchema('fg_rules_audit')

interface ModelRule {
  id: string
  limit: number
}

type Op =
  | { kind: 'create' | 'replace' | 'patch'; id: string; limit: number }
  | { kind: 'delete'; id: string }
  | { kind: 'replace-all'; rules: ModelRule[] }

const IDS = ['a', 'b', 'c', 'd']
const id = fc.constantFrom(...IDS)
const limit = fc.integer({ min: 1, max: 3 })
const op: fc.Arbitrary<Op> = fc.oneof(
  fc.record({ kind: fc.constantFrom('create', 'replace', 'patch'), id, limit }),
  fc.record({ kind: fc.constant('delete'), id }),
  fc.record({
    kind: fc.constant('replace-all'),
    // Any subset in any order, with any limits: reorders, inserts in the middle, deletes.
    rules: fc
      .shuffledSubarray(IDS)
      .chain((ids) =>
        fc.tuple(...ids.map((i) => limit.map((l): ModelRule => ({ id: i, limit: l })))),
      ),
  }),
)

const body = (r: ModelRule) => ({ id: r.id, limit: r.limit, window: '1m' })

/** What the model says a write does: the next set, and the status the API must answer. */
function apply(set: readonly ModelRule[], o: Op): { next: ModelRule[]; status: number } {
  const index = 'id' in o ? set.findIndex((r) => r.id === o.id) : -1
  switch (o.kind) {
    case 'create':
      return index >= 0
        ? { next: [...set], status: 409 }
        : { next: [...set, { id: o.id, limit: o.limit }], status: 201 }
    case 'replace':
    case 'patch': {
      if (index < 0) {
        return o.kind === 'patch'
          ? { next: [...set], status: 404 }
          : { next: [...set, { id: o.id, limit: o.limit }], status: 201 }
      }
      const next = [...set]
      next[index] = { id: o.id, limit: o.limit }
      return { next, status: 200 }
    }
    case 'delete':
      return index < 0
        ? { next: [...set], status: 404 }
        : { next: set.filter((r) => r.id !== o.id), status: 200 }
    case 'replace-all':
      return { next: o.rules, status: 200 }
  }
}

/** Replay one revision's audit entries on the set before it. */
function replay(set: readonly ModelRule[], entries: readonly AuditEntry[]): ModelRule[] {
  let next = [...set]
  for (const entry of [...entries].sort((x, y) => x.id - y.id)) {
    if (entry.action === 'reorder') {
      const order = entry.after as string[]
      next = order.map((i) => next.find((r) => r.id === i)!)
      continue
    }
    const ruleId = entry.ruleId!
    if (entry.action === 'delete') {
      next = next.filter((r) => r.id !== ruleId)
      continue
    }
    const after = entry.after as { id: string; limit: number }
    const rule = { id: after.id, limit: after.limit }
    const at = next.findIndex((r) => r.id === ruleId)
    if (at >= 0) next[at] = rule
    else next.push(rule)
  }
  return next
}

const backends = [
  { name: 'PGlite', skip: false },
  { name: 'PostgreSQL', skip: !hasPostgres },
]

for (const backend of backends) {
  describe.skipIf(backend.skip)(`audit trail on ${backend.name}`, () => {
    let app: RulesServiceApp
    let db: Db | undefined
    let services = 0

    beforeAll(async () => {
      db = backend.name === 'PGlite' ? await openPgliteDb() : undefined
      app = await createRulesService({
        ...(db ? { db } : { databaseUrl: DATABASE_URL, schema: pgSchema }),
        tokens: [{ name: 'ops', role: 'admin', token: TOKENS.admin }],
      })
    })
    afterAll(async () => {
      await app?.close()
      await db?.close()
      if (backend.name === 'PostgreSQL') await dropSchema(pgSchema)
    })

    const send = async (method: string, url: string, payload?: unknown, type?: string) => {
      const res = await app.inject({
        method: method as 'GET',
        url,
        headers: {
          authorization: `Bearer ${TOKENS.admin}`,
          ...(payload !== undefined ? { 'content-type': type ?? 'application/json' } : {}),
        },
        ...(payload !== undefined ? { payload: JSON.stringify(payload) } : {}),
      })
      return { status: res.statusCode, body: res.json<Record<string, unknown>>() }
    }

    it('for any sequence of writes, revisions and audit entries correspond one to one', async () => {
      await fc.assert(
        fc.asyncProperty(fc.array(op, { minLength: 1, maxLength: 12 }), async (ops) => {
          const service = `audit-${++services}`
          expect((await send('PUT', `/v1/services/${service}`)).status).toBe(201)
          const base = `/v1/services/${service}/rules`
          let model: ModelRule[] = []
          const history: ModelRule[][] = [[]]
          for (const o of ops) {
            const { next, status } = apply(model, o)
            const res =
              o.kind === 'create'
                ? await send('POST', base, body(o))
                : o.kind === 'replace'
                  ? await send('PUT', `${base}/${o.id}`, body(o))
                  : o.kind === 'patch'
                    ? await send(
                        'PATCH',
                        `${base}/${o.id}`,
                        { limit: o.limit },
                        'application/merge-patch+json',
                      )
                    : o.kind === 'delete'
                      ? await send('DELETE', `${base}/${o.id}`)
                      : await send('PUT', base, {
                          rules: (o as Extract<Op, { kind: 'replace-all' }>).rules.map(body),
                        })
            expect(res.status, JSON.stringify(o)).toBe(status)
            if (JSON.stringify(next) !== JSON.stringify(model)) history.push(next)
            model = next
            const set = await send('GET', `/v1/services/${service}/ruleset`)
            expect(set.body.revision).toBe(history.length - 1)
            expect(
              (set.body.rules as ModelRule[]).map((r) => ({ id: r.id, limit: r.limit })),
            ).toEqual(model)
          }

          const audit = await send('GET', `/v1/services/${service}/audit?limit=500`)
          const entries = audit.body.entries as AuditEntry[]
          const byRevision = new Map<number, AuditEntry[]>()
          for (const e of entries)
            byRevision.set(e.revision, [...(byRevision.get(e.revision) ?? []), e])
          const revisions = history.map((_, i) => i).slice(1)
          expect([...byRevision.keys()].sort((x, y) => x - y)).toEqual(revisions)
          let replayed: ModelRule[] = []
          for (const revision of revisions) {
            replayed = replay(replayed, byRevision.get(revision)!)
            expect(replayed, `revision ${revision}`).toEqual(history[revision])
          }
        }),
        { numRuns: 25 },
      )
    }, 120_000)

    it('records a whole-set write that only reorders as one reorder entry', async () => {
      const service = `audit-${++services}`
      await send('PUT', `/v1/services/${service}`)
      const url = `/v1/services/${service}/rules`
      const a = { id: 'a', limit: 1 }
      const b = { id: 'b', limit: 2 }
      expect((await send('PUT', url, { rules: [body(a), body(b)] })).body.revision).toBe(1)
      const swapped = await send('PUT', url, { rules: [body(b), body(a)] })
      expect(swapped.body).toMatchObject({ revision: 2, changed: true })
      const audit = await send('GET', `/v1/services/${service}/audit?limit=1`)
      expect(audit.body.entries).toMatchObject([
        { revision: 2, action: 'reorder', ruleId: null, before: ['a', 'b'], after: ['b', 'a'] },
      ])
    })
  })
}
