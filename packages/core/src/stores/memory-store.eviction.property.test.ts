import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import type { AlgorithmName } from '../algorithms/algorithm.js'
import type { CompiledRule } from '../rules/compiled-rules.js'
import { testRule } from '../testing/test-rule.js'
import { MAX_KEYS_CEILING, MemoryStore } from './memory-store.js'
import type { ConsumeEntry } from './store.js'

const ALGORITHMS: readonly AlgorithmName[] = [
  'token-bucket',
  'gcra',
  'fixed-window',
  'sliding-window-log',
  'sliding-window-counter',
  'leaky-bucket',
  'concurrency',
]
const RESERVING = new Set<AlgorithmName>(['token-bucket', 'gcra', 'fixed-window', 'leaky-bucket'])
const DEBT = new Set<AlgorithmName>(['token-bucket', 'gcra'])

const ruleSpec = fc.record({
  algorithm: fc.constantFrom(...ALGORITHMS),
  limit: fc.integer({ min: 1, max: 5 }),
  windowMs: fc.constantFrom(1000, 10_000, 60_000),
  extraBurst: fc.integer({ min: 0, max: 3 }),
})
type RuleSpec = typeof ruleSpec extends fc.Arbitrary<infer T> ? T : never

const build = (s: RuleSpec): CompiledRule =>
  testRule(s.algorithm, s.limit, s.windowMs, { burst: s.limit + s.extraBurst })

const step = fc.oneof(
  fc.record({
    t: fc.constant('request' as const),
    cost: fc.integer({ min: 1, max: 9 }),
    waitMs: fc.oneof(fc.constant(0), fc.integer({ min: 1, max: 120_000 })),
    both: fc.boolean(),
  }),
  fc.record({ t: fc.constant('release' as const) }),
  fc.record({ t: fc.constant('charge' as const), cost: fc.integer({ min: 1, max: 9 }) }),
  fc.record({
    t: fc.constant('flood' as const),
    keys: fc.integer({ min: 1, max: 40 }),
    cost: fc.integer({ min: 1, max: 4 }),
    rule: fc.nat(2),
  }),
  fc.record({ t: fc.constant('tick' as const), ms: fc.integer({ min: 0, max: 90_000 }) }),
)

describe('MemoryStore eviction under key pressure', () => {
  it('a flood of random keys never makes a tracked client looser than an unbounded store', () => {
    fc.assert(
      fc.property(
        ruleSpec,
        ruleSpec,
        fc.integer({ min: 1, max: 8 }),
        fc.array(step, { minLength: 1, maxLength: 60, size: 'max' }),
        (specA, specB, maxKeys, steps) => {
          const rules = [build(specA), build(specB), testRule('fixed-window', 3, 60_000)]
          const bounded = new MemoryStore({ maxKeys })
          const reference = new MemoryStore()
          let now = 0
          let flood = 0
          // Concurrency units the tracked client holds, per admitted request, to release later.
          const held: ConsumeEntry[][] = []
          for (const s of steps) {
            if (s.t === 'tick') now += s.ms
            else if (s.t === 'flood') {
              const rule = rules[s.rule]!
              for (let i = 0; i < s.keys; i++) {
                const key = `flood-${flood++}`
                bounded.consume([{ rule, key, cost: s.cost, maxWaitMs: 0, shadow: false }], now)
              }
              expect(bounded.size).toBeLessThanOrEqual(maxKeys)
            } else if (s.t === 'release') {
              const entries = held.shift()
              if (entries) {
                bounded.refund(entries, now)
                reference.refund(entries, now)
              }
            } else if (s.t === 'charge') {
              if (!DEBT.has(specA.algorithm)) continue
              const before = bounded.overflowed
              bounded.charge(rules[0]!, 'tracked', s.cost, now)
              // A full store drops a charge to a key it holds no state for (documented); from
              // then on the two stores know different things, so stop comparing.
              if (bounded.overflowed !== before) return
              reference.charge(rules[0]!, 'tracked', s.cost, now)
            } else {
              const entries: ConsumeEntry[] = (s.both ? [0, 1] : [0]).map((i) => ({
                rule: rules[i]!,
                key: 'tracked',
                cost: s.cost,
                maxWaitMs: RESERVING.has(i === 0 ? specA.algorithm : specB.algorithm)
                  ? s.waitMs
                  : 0,
                shadow: false,
              }))
              const before = bounded.overflowed
              const got = bounded.consume(entries, now).map((r) => ({ ...r }))
              if (bounded.overflowed !== before) {
                // No room for the tracked client's state: refused, nothing recorded anywhere.
                expect(got.some((r) => !r.allowed)).toBe(true)
                continue
              }
              const want = reference.consume(entries, now).map((r) => ({ ...r }))
              expect(got.map((r) => [r.allowed, r.waitMs])).toEqual(
                want.map((r) => [r.allowed, r.waitMs]),
              )
              if (want.every((r) => r.allowed)) {
                const conc = entries.filter((e) => e.rule.algorithm.name === 'concurrency')
                if (conc.length > 0) held.push(conc)
              }
            }
          }
        },
      ),
      { numRuns: 1500 },
    )
  })

  it('refuses a new key when full of state that is not fresh, without growing', () => {
    const store = new MemoryStore({ maxKeys: 2 })
    const rule = testRule('concurrency', 1, 1000)
    const one = (key: string): ConsumeEntry[] => [
      { rule, key, cost: 1, maxWaitMs: 0, shadow: false },
    ]
    expect(store.consume(one('a'), 0)[0]!.allowed).toBe(true)
    expect(store.consume(one('b'), 0)[0]!.allowed).toBe(true)
    expect(store.consume(one('c'), 0)[0]).toMatchObject({ allowed: false, retryAfterMs: 1000 })
    expect(store.size).toBe(2)
    expect(store.overflowed).toBe(1)
    // Holders of a slot stay refused: their state was kept.
    expect(store.consume(one('a'), 10_000_000)[0]!.allowed).toBe(false)
    // A released slot is fresh state again, which may be evicted for a newcomer.
    store.refund(one('b'), 1)
    expect(store.consume(one('c'), 2)[0]!.allowed).toBe(true)
  })

  it('a cost-0 entry (a ban check) of a key with no state takes no room and reads as fresh', () => {
    const store = new MemoryStore({ maxKeys: 1 })
    const rule = testRule('token-bucket', 1, 60_000)
    const ask = (key: string, cost: number): ConsumeEntry => ({
      rule,
      key,
      cost,
      maxWaitMs: 0,
      shadow: false,
    })
    expect(store.consume([ask('a', 1)], 0)[0]!.allowed).toBe(true)
    // Full of state that is not fresh: a new key's cost-0 entry is still answered as fresh.
    expect(store.consume([ask('b', 0)], 0)[0]).toMatchObject({ allowed: true, remaining: 1 })
    expect(store.consume([ask('b', 0), ask('a', 0)], 0).map((r) => r.remaining)).toEqual([1, 0])
    expect(store.size).toBe(1)
    expect(store.overflowed).toBe(0)
    // A new key that asks for something is refused, flagged as the store's refusal.
    expect(store.consume([ask('b', 1)], 0)[0]).toMatchObject({ allowed: false, storeFull: true })
    expect(store.consume([ask('a', 0)], 0)[0]!.storeFull).toBeUndefined()
  })

  it('penalize tells when a new key had no room, and charges the keys that had', () => {
    const store = new MemoryStore({ maxKeys: 2 })
    const rule = testRule('token-bucket', 1, 60_000)
    store.consume([{ rule, key: 'a', cost: 1, maxWaitMs: 0, shadow: false }], 0)
    store.charge(rule, 'b', 1, 0)
    expect(() =>
      store.penalize(
        [
          { rule, key: 'a', cost: 2 },
          { rule, key: 'c', cost: 2 },
        ],
        0,
      ),
    ).toThrow(expect.objectContaining({ code: 'FG_ERR_STORE_FULL' }))
    expect(store.peek([{ rule, key: 'a' }], 0)[0]!.retryAfterMs).toBe(120_000)
    // charge (SyncedStore's units) still drops what has no room, as documented.
    expect(() => store.charge(rule, 'c', 1, 0)).not.toThrow()
    expect(store.overflowed).toBe(2)
  })

  it('caps maxKeys below the Map ceiling of 2^24 entries, so the cap is never a RangeError', () => {
    expect(MAX_KEYS_CEILING).toBeLessThan(2 ** 24)
    expect(() => new MemoryStore({ maxKeys: MAX_KEYS_CEILING })).not.toThrow()
    expect(() => new MemoryStore({ maxKeys: MAX_KEYS_CEILING + 1 })).toThrow(/maxKeys/)
  })
})
