import fc from 'fast-check'
import { describe, expect, it, vi } from 'vitest'
import type { AlgorithmResult } from '../algorithms/algorithm.js'
import type { Decision } from '../decision.js'
import { createLimiter } from '../limiter.js'
import type { Limiter } from '../limiter-types.js'
import type { RuleInput } from '../rules/schema.js'
import { MemoryStore } from '../stores/memory-store.js'
import type { ConsumeEntry, RefundEntry, StateEntry, Store } from '../stores/store.js'

// Adaptive rules against a reference model, over random sequences of what a host sees: checks
// from a few clients at random costs, releases of a random outstanding decision (once, twice,
// never), a clock crossing window ends (the limit moves), rule sets swapped while requests are
// in flight (the rule kept, its settings changed, removed, added back, shadow on and off, a
// token-bucket rule beside it or not).
//
// The model: the slots in flight are those of admitted, unreleased decisions taken since the
// rule was last added (a settings change keeps them: they are requests the host still runs);
// with no reserve, a request is admitted exactly when those slots plus its cost fit the limit
// in force, and the token-bucket rule beside it is charged nothing when the adaptive rule
// refuses.

const EPS = 1e-6
const CLIENTS = ['10.0.0.1', '10.0.0.2', '10.0.0.3', '10.0.0.4']
const COSTS = [1, 1, 2, 0, 0.5, 3]

interface Variant {
  /** The adaptive rule's settings: 0 or 1 (a target change), or absent. */
  readonly adaptive: 0 | 1 | undefined
  readonly shadow: boolean
  readonly tb: boolean
}

type Op =
  | { readonly kind: 'check'; readonly client: number; readonly cost: number }
  | { readonly kind: 'release'; readonly pick: number; readonly twice: boolean }
  | { readonly kind: 'advance'; readonly ms: number }
  | { readonly kind: 'swap'; readonly variant: Variant }

const variantArb: fc.Arbitrary<Variant> = fc.record({
  adaptive: fc.constantFrom<0 | 1 | undefined>(0, 0, 1, undefined),
  shadow: fc.boolean(),
  tb: fc.boolean(),
})

const opArb: fc.Arbitrary<Op> = fc.oneof(
  {
    weight: 6,
    arbitrary: fc.record({
      kind: fc.constant('check' as const),
      client: fc.nat(CLIENTS.length - 1),
      cost: fc.constantFrom(...COSTS),
    }),
  },
  {
    weight: 4,
    arbitrary: fc.record({
      kind: fc.constant('release' as const),
      pick: fc.nat(),
      twice: fc.boolean(),
    }),
  },
  {
    weight: 2,
    arbitrary: fc.record({
      kind: fc.constant('advance' as const),
      ms: fc.constantFrom(1, 30, 400, 1000, 2500),
    }),
  },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('swap' as const), variant: variantArb }) },
)
// size 'max': at fast-check's default size an array of maxLength 60 holds about ten operations.
const opsArb = fc.array(opArb, { maxLength: 60, size: 'max' })

function rulesOf(v: Variant): RuleInput[] {
  const rules: RuleInput[] = []
  if (v.adaptive !== undefined) {
    rules.push({
      id: 'a',
      algorithm: 'adaptive',
      shadow: v.shadow,
      adaptive: {
        target: v.adaptive === 0 ? '100ms' : '60ms',
        window: '1s',
        initialLimit: v.adaptive === 0 ? 4 : 2,
        minLimit: 1,
        maxLimit: 8,
        minSamples: 1,
        reserve: 0,
      },
    })
  }
  if (v.tb) rules.push({ id: 'tb', algorithm: 'token-bucket', limit: 6, window: '1s' })
  return rules
}

interface Held {
  readonly decision: Decision
  /** Which presence of the adaptive rule took the slot (it counts only while that one lasts). */
  readonly life: number
  readonly client: string
  readonly cost: number
  readonly slot: boolean
  released: boolean
}

/** The reference: slots held per presence of the rule, from decisions alone. */
class Model {
  life = 0
  readonly held: Held[] = []

  inFlight(life = this.life): number {
    let n = 0
    for (const h of this.held) if (h.slot && !h.released && h.life === life) n += h.cost
    return n
  }

  clients(): number {
    const per = new Map<string, number>()
    for (const h of this.held) {
      if (h.slot && !h.released && h.life === this.life) {
        per.set(h.client, (per.get(h.client) ?? 0) + h.cost)
      }
    }
    return [...per.values()].filter((n) => n > EPS).length
  }
}

function outcome(d: Decision, id: string) {
  return d.outcomes.find((o) => o.rule.id === id)
}

async function remainingOf(limiter: Limiter, client: string): Promise<number> {
  const states = await limiter.get(client, { rule: 'tb' })
  return states[0]!.remaining
}

/** The invariants that hold between any two operations. */
function expectInFlight(limiter: Limiter, model: Model, present: boolean, where: string): void {
  const state = limiter.adaptive('a')
  const counted = limiter.counters().inFlight.get('a') ?? 0
  if (!present) {
    expect(state, where).toBeUndefined()
    expect(counted, where).toBe(0)
    return
  }
  const want = model.inFlight()
  expect(state!.inFlight, `${where}: adaptive('a').inFlight`).toBeGreaterThanOrEqual(0)
  expect(
    Math.abs(state!.inFlight - want),
    `${where}: adaptive('a').inFlight ${state!.inFlight} vs ${want}`,
  ).toBeLessThan(EPS)
  expect(
    Math.abs(counted - want),
    `${where}: counters().inFlight ${counted} vs ${want}`,
  ).toBeLessThan(EPS)
  expect(state!.clients, `${where}: clients holding slots`).toBe(model.clients())
}

describe('adaptive rule: in flight against a reference model', () => {
  it('property: slots equal the model’s through checks, releases, clock, swaps and shadow', async () => {
    await fc.assert(
      fc.asyncProperty(variantArb, opsArb, async (start, ops) => {
        let now = 1_000_000
        let variant = start
        const limiter = createLimiter({ clock: () => now, rules: rulesOf(start) })
        const model = new Model()
        let present = start.adaptive !== undefined
        for (const [i, op] of ops.entries()) {
          const where = `op ${i} ${JSON.stringify(op)}`
          if (op.kind === 'check') {
            const client = CLIENTS[op.client]!
            const limit = present ? limiter.adaptive('a')!.limit : 0
            const before = variant.tb ? await remainingOf(limiter, client) : 0
            const fits = model.inFlight() + op.cost <= limit + EPS
            const d = limiter.check({
              method: 'GET',
              path: '/',
              ip: client,
              headers: {},
              cost: op.cost,
            }) as Decision
            const a = outcome(d, 'a')
            if (present) {
              expect(a?.allowed, `${where}: the adaptive verdict`).toBe(fits)
              if (!fits && !variant.shadow) expect(d.allowed, where).toBe(false)
              if (!fits && !variant.shadow && variant.tb) {
                // All-or-nothing: the token bucket was only read.
                expect(await remainingOf(limiter, client), `${where}: tb charged`).toBe(before)
              }
            }
            const tbOk = !variant.tb || outcome(d, 'tb')!.allowed
            if (present && (fits || variant.shadow)) expect(d.allowed, where).toBe(tbOk)
            model.held.push({
              decision: d,
              life: model.life,
              client,
              cost: op.cost,
              slot: present && fits && d.allowed,
              released: false,
            })
          } else if (op.kind === 'release') {
            if (model.held.length === 0) continue
            const h = model.held[op.pick % model.held.length]!
            limiter.release(h.decision)
            if (op.twice) limiter.release(h.decision)
            h.released = true
          } else if (op.kind === 'advance') {
            now += op.ms
          } else {
            const next = op.variant
            limiter.updateRules(rulesOf(next))
            const stays = next.adaptive !== undefined
            if (present && !stays) model.life++
            present = stays
            variant = next
          }
          expectInFlight(limiter, model, present, where)
        }
        // Whatever was never released, released now: nothing stays in flight.
        for (const h of model.held) limiter.release(h.decision)
        for (const h of model.held) h.released = true
        expectInFlight(limiter, model, present, 'all released')
        if (present) expect(limiter.adaptive('a')!.clients).toBe(0)
      }),
      { numRuns: 300 },
    )
  })
})

// ---- beside a token-bucket rule, on a store that misbehaves -------------------------------

/** How the store answers one consume call. */
type Mode = 'sync' | 'async' | 'held' | 'late' | 'throw' | 'reject' | 'short' | 'garbage'
const MODES: readonly Mode[] = [
  'sync',
  'async',
  'held',
  'late',
  'throw',
  'reject',
  'short',
  'garbage',
]
const TIMEOUT_MS = 50

type HostileOp =
  | { readonly kind: 'check'; readonly client: number; readonly cost: number; readonly mode: Mode }
  | { readonly kind: 'deliver'; readonly pick: number }
  | { readonly kind: 'release'; readonly pick: number; readonly twice: boolean }
  | { readonly kind: 'advance'; readonly ms: number }
  | { readonly kind: 'swap'; readonly target: 0 | 1; readonly shadow: boolean }

const hostileOpArb: fc.Arbitrary<HostileOp> = fc.oneof(
  {
    weight: 6,
    arbitrary: fc.record({
      kind: fc.constant('check' as const),
      client: fc.nat(CLIENTS.length - 1),
      cost: fc.constantFrom(1, 1, 2, 0.5),
      mode: fc.constantFrom(...MODES),
    }),
  },
  { weight: 3, arbitrary: fc.record({ kind: fc.constant('deliver' as const), pick: fc.nat() }) },
  {
    weight: 4,
    arbitrary: fc.record({
      kind: fc.constant('release' as const),
      pick: fc.nat(),
      twice: fc.boolean(),
    }),
  },
  {
    weight: 1,
    arbitrary: fc.record({
      kind: fc.constant('advance' as const),
      ms: fc.constantFrom(1, 400, 1000),
    }),
  },
  {
    // The adaptive rule's settings changed, or shadow switched, while answers are on the way.
    weight: 1,
    arbitrary: fc.record({
      kind: fc.constant('swap' as const),
      target: fc.constantFrom<0 | 1>(0, 1),
      shadow: fc.boolean(),
    }),
  },
)

/** A MemoryStore behind a switch: each consume call answers the way it is told. */
class HostileStore implements Store {
  private readonly memory = new MemoryStore()
  next: Mode = 'sync'
  /** Answers kept back until the test delivers them ('held' before the deadline, 'late' after). */
  readonly waiting: (() => void)[] = []

  consume(entries: readonly ConsumeEntry[], nowMs: number) {
    const mode = this.next
    this.next = 'sync'
    if (mode === 'throw') throw new Error('store down')
    if (mode === 'reject') return Promise.reject(new Error('store down'))
    const answer = (this.memory.consume(entries, nowMs) as AlgorithmResult[]).map((r) => ({ ...r }))
    if (mode === 'short') return answer.slice(1)
    // A verdict the limiter would take, with a number it must refuse.
    if (mode === 'garbage')
      return answer.map((r) => ({ ...r, allowed: true, remaining: Number.NaN }))
    if (mode === 'sync') return answer
    if (mode === 'async') return Promise.resolve(answer)
    return new Promise<readonly AlgorithmResult[]>((resolve) =>
      this.waiting.push(() => resolve(answer)),
    )
  }

  /** A store that cannot give anything back: the adaptive slots must come back regardless. */
  refundFails = false

  refund(entries: readonly RefundEntry[], nowMs: number) {
    if (this.refundFails) throw new Error('refund down')
    return this.memory.refund(entries, nowMs)
  }

  peek(entries: readonly StateEntry[], nowMs: number) {
    return this.memory.peek(entries, nowMs)
  }
}

const hostileRules = (target: 0 | 1, shadow: boolean): RuleInput[] => [
  ...rulesOf({ adaptive: target, shadow, tb: false }),
  { id: 'tb', algorithm: 'token-bucket', limit: 6, window: '1s' },
]

/** Let the limiter act on an answer delivered (its handlers run in microtasks). */
const turn = () => new Promise<void>((resolve) => setImmediate(resolve))

interface Pending {
  readonly promise: Promise<Decision>
  readonly deliver: () => void
  readonly client: string
  readonly cost: number
  /** Whether the slots fit when the request was checked (the first look). */
  readonly fitted: boolean
  /** Whether the adaptive rule was in shadow when the request was checked. */
  readonly shadow: boolean
}

describe('adaptive rule beside a token bucket, on a store that fails, answers late or garbage', () => {
  it('property: a failed, late or invalid answer holds no slot; every answer taken holds exactly its own', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] })
    try {
      await fc.assert(
        fc.asyncProperty(
          fc.boolean(),
          fc.boolean(),
          fc.array(hostileOpArb, { maxLength: 50, size: 'max' }),
          async (startShadow, refundFails, ops) => {
            let shadow = startShadow
            let now = 1_000_000
            const store = new HostileStore()
            store.refundFails = refundFails
            const limiter = createLimiter({
              clock: () => now,
              store,
              decisionTimeoutMs: TIMEOUT_MS,
              logger: { debug() {}, info() {}, warn() {}, error() {} },
              rules: hostileRules(0, shadow),
            })
            const model = new Model()
            const pending: Pending[] = []
            const settle = (
              d: Decision,
              p: Omit<Pending, 'promise' | 'deliver'>,
              limit: number,
              where: string,
            ) => {
              const a = outcome(d, 'a')
              const fits = model.inFlight() + p.cost <= limit + EPS
              if (!d.failedOpen) {
                const tbOk = outcome(d, 'tb')!.allowed
                if (!p.shadow && !p.fitted)
                  expect(d.allowed, `${where}: refused at the first look`).toBe(false)
                else if (tbOk) expect(a!.allowed, `${where}: the adaptive verdict`).toBe(fits)
              }
              model.held.push({
                decision: d,
                life: 0,
                client: p.client,
                cost: p.cost,
                slot: !d.failedOpen && d.allowed && a?.allowed === true,
                released: false,
              })
            }
            for (const [i, op] of ops.entries()) {
              const where = `op ${i} ${JSON.stringify(op)}`
              const limit = limiter.adaptive('a')!.limit
              if (op.kind === 'check') {
                const client = CLIENTS[op.client]!
                const fitted = model.inFlight() + op.cost <= limit + EPS
                store.next = op.mode
                const waited = store.waiting.length
                const d = limiter.check({
                  method: 'GET',
                  path: '/',
                  ip: client,
                  headers: {},
                  cost: op.cost,
                })
                const p = { client, cost: op.cost, fitted, shadow }
                if (op.mode === 'late') {
                  // The deadline passes, the request goes unjudged, then the answer comes.
                  vi.advanceTimersByTime(TIMEOUT_MS)
                  const decided = await d
                  expect(decided.failedOpen, where).toBe(true)
                  settle(decided, p, limit, where)
                  store.waiting.pop()!()
                  await turn()
                } else if (op.mode === 'held' && store.waiting.length > waited) {
                  const deliver = store.waiting.pop()!
                  pending.push({ promise: Promise.resolve(d), deliver, ...p })
                } else {
                  const decided = await d
                  // The store is asked on every request (charging nothing when the adaptive
                  // rule refused): a failing answer always passes it unjudged, a good one never.
                  const failing = op.mode !== 'sync' && op.mode !== 'async' && op.mode !== 'held'
                  expect(decided.failedOpen, `${where}: failed open`).toBe(failing)
                  settle(decided, p, limit, where)
                }
              } else if (op.kind === 'deliver') {
                if (pending.length === 0) continue
                const p = pending.splice(op.pick % pending.length, 1)[0]!
                p.deliver()
                settle(await p.promise, p, limit, where)
                await turn()
              } else if (op.kind === 'release') {
                if (model.held.length === 0) continue
                const h = model.held[op.pick % model.held.length]!
                limiter.release(h.decision)
                if (op.twice) limiter.release(h.decision)
                h.released = true
              } else if (op.kind === 'advance') {
                now += op.ms
              } else {
                // A settings change keeps the slots (the model's count goes on).
                limiter.updateRules(hostileRules(op.target, op.shadow))
                shadow = op.shadow
              }
              expectInFlight(limiter, model, true, where)
            }
            for (const p of pending) {
              p.deliver()
              settle(await p.promise, p, limiter.adaptive('a')!.limit, 'at the end')
              await turn()
            }
            for (const h of model.held) limiter.release(h.decision)
            for (const h of model.held) h.released = true
            expectInFlight(limiter, model, true, 'all released')
          },
        ),
        { numRuns: 800 },
      )
    } finally {
      vi.useRealTimers()
    }
  })
})

// ---- a gate shared by two rules, one of them background traffic ---------------------------

interface SharedVariant {
  readonly fg: boolean
  readonly bg: boolean
  readonly target: 0 | 1
}

const RESERVE = 0.4
const PATHS = ['/fg', '/bg', '/both'] as const

function sharedRules(v: SharedVariant): RuleInput[] {
  const rule = (id: string, paths: string[], priority: 'normal' | 'background') =>
    ({
      id,
      algorithm: 'adaptive',
      match: { paths },
      adaptive: {
        gate: 'g',
        priority,
        target: v.target === 0 ? '100ms' : '60ms',
        window: '1s',
        initialLimit: 5,
        minLimit: 1,
        maxLimit: 10,
        minSamples: 1,
        reserve: RESERVE,
      },
    }) as RuleInput
  const rules: RuleInput[] = []
  if (v.fg) rules.push(rule('fg', ['/fg', '/both'], 'normal'))
  if (v.bg) rules.push(rule('bg', ['/bg', '/both'], 'background'))
  return rules
}

type SharedOp =
  | {
      readonly kind: 'check'
      readonly client: number
      readonly cost: number
      readonly path: number
    }
  | { readonly kind: 'release'; readonly pick: number; readonly twice: boolean }
  | { readonly kind: 'advance'; readonly ms: number }
  | { readonly kind: 'swap'; readonly variant: SharedVariant }

const sharedVariantArb: fc.Arbitrary<SharedVariant> = fc.record({
  fg: fc.boolean(),
  bg: fc.boolean(),
  target: fc.constantFrom<0 | 1>(0, 0, 1),
})

const sharedOpArb: fc.Arbitrary<SharedOp> = fc.oneof(
  {
    weight: 6,
    arbitrary: fc.record({
      kind: fc.constant('check' as const),
      client: fc.nat(CLIENTS.length - 1),
      cost: fc.constantFrom(1, 1, 2, 0.5, 0),
      path: fc.nat(PATHS.length - 1),
    }),
  },
  {
    weight: 4,
    arbitrary: fc.record({
      kind: fc.constant('release' as const),
      pick: fc.nat(),
      twice: fc.boolean(),
    }),
  },
  {
    weight: 1,
    arbitrary: fc.record({
      kind: fc.constant('advance' as const),
      ms: fc.constantFrom(30, 1000, 2500),
    }),
  },
  {
    weight: 1,
    arbitrary: fc.record({ kind: fc.constant('swap' as const), variant: sharedVariantArb }),
  },
)
// size 'max': at fast-check's default size an array of maxLength 60 holds about ten operations.
const sharedOpsArb = fc.array(sharedOpArb, { maxLength: 60, size: 'max' })

interface SharedHeld {
  readonly decision: Decision
  readonly life: number
  readonly client: string
  /** The slots taken, by rule id. */
  readonly slots: readonly { readonly rule: string; readonly cost: number }[]
  released: boolean
}

describe('a gate shared by a normal and a background rule', () => {
  it('property: the gate admits exactly as the model does (reserve, fair share, background), counts per rule, and gives everything back', () => {
    fc.assert(
      fc.property(sharedVariantArb, sharedOpsArb, (start, ops) => {
        let now = 1_000_000
        let variant = start
        const limiter = createLimiter({ clock: () => now, rules: sharedRules(start) })
        let life = 0
        const held: SharedHeld[] = []
        const live = () => held.filter((h) => !h.released && h.life === life)
        const ofRule = (id: string) =>
          live().reduce(
            (n, h) => n + h.slots.filter((s) => s.rule === id).reduce((m, s) => m + s.cost, 0),
            0,
          )
        const perClient = () => {
          const m = new Map<string, number>()
          for (const h of live())
            for (const s of h.slots) m.set(h.client, (m.get(h.client) ?? 0) + s.cost)
          return m
        }
        const present = () => variant.fg || variant.bg
        const anyId = () => (variant.fg ? 'fg' : 'bg')
        const expectCounts = (where: string) => {
          for (const id of ['fg', 'bg'] as const) {
            const inForce = variant[id]
            const counted = limiter.counters().inFlight.get(id) ?? 0
            expect(
              Math.abs(counted - (inForce ? ofRule(id) : 0)),
              `${where}: counters ${id}`,
            ).toBeLessThan(EPS)
          }
          if (!present()) return
          const state = limiter.adaptive(anyId())!
          const total = ofRule('fg') + ofRule('bg')
          expect(
            Math.abs(state.inFlight - total),
            `${where}: gate in flight ${state.inFlight} vs ${total}`,
          ).toBeLessThan(EPS)
          expect(state.clients, `${where}: clients`).toBe(
            [...perClient().values()].filter((n) => n > EPS).length,
          )
        }
        for (const [i, op] of ops.entries()) {
          const where = `op ${i} ${JSON.stringify(op)}`
          if (op.kind === 'check') {
            const client = CLIENTS[op.client]!
            const path = PATHS[op.path]!
            const rules = [
              ...(variant.fg && path !== '/bg' ? ['fg'] : []),
              ...(variant.bg && path !== '/fg' ? ['bg'] : []),
            ]
            // The model: each matched rule in turn takes its slots, all or none.
            let admitted = true
            if (rules.length > 0) {
              const cap = limiter.adaptive(anyId())!.limit
              const reserved = Math.floor(cap * RESERVE)
              const clients = perClient()
              let total = ofRule('fg') + ofRule('bg')
              let mine = clients.get(client) ?? 0
              let holders = [...clients.values()].filter((n) => n > EPS).length
              for (const id of rules) {
                const after = total + op.cost
                let ok = after <= cap + EPS
                if (ok && after > cap - reserved + EPS) {
                  ok = id === 'bg' ? false : mine + op.cost <= cap / (holders + 1) + EPS
                }
                if (!ok) {
                  admitted = false
                  break
                }
                total = after
                if (mine <= EPS && op.cost > 0) holders++
                mine += op.cost
              }
            }
            const d = limiter.check({
              method: 'GET',
              path,
              ip: client,
              headers: {},
              cost: op.cost,
            }) as Decision
            expect(d.allowed, `${where}: the verdict`).toBe(admitted)
            held.push({
              decision: d,
              life,
              client,
              slots: admitted ? rules.map((rule) => ({ rule, cost: op.cost })) : [],
              released: false,
            })
          } else if (op.kind === 'release') {
            if (held.length === 0) continue
            const h = held[op.pick % held.length]!
            limiter.release(h.decision)
            if (op.twice) limiter.release(h.decision)
            h.released = true
          } else if (op.kind === 'advance') {
            now += op.ms
          } else {
            limiter.updateRules(sharedRules(op.variant))
            // The gate goes when no rule names it; it comes back empty.
            if (present() && !(op.variant.fg || op.variant.bg)) life++
            variant = op.variant
          }
          expectCounts(where)
        }
        for (const h of held) limiter.release(h.decision)
        for (const h of held) h.released = true
        expectCounts('all released')
      }),
      { numRuns: 300 },
    )
  })
})
