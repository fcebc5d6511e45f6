import { describe, expect, it } from 'vitest'
import type { AlgorithmResult } from '../algorithms/algorithm.js'
import type { Decision } from '../decision.js'
import { createLimiter } from '../limiter.js'
import type { RuleInput } from '../rules/schema.js'
import { MemoryStore } from '../stores/memory-store.js'
import type { ConsumeEntry, RefundEntry, Store } from '../stores/store.js'

// The smallest counterexamples the property tests (adaptive-properties.test.ts) found, kept as
// plain cases so that each defect's class has a name in the test report.

const facts = (path = '/', ip = '203.0.113.7', cost?: number) => ({
  method: 'GET',
  path,
  ip,
  headers: {},
  ...(cost === undefined ? {} : { cost }),
})
const adaptive = (more: Record<string, unknown> = {}) => ({
  target: '100ms',
  window: '1s',
  initialLimit: 1,
  minSamples: 1,
  reserve: 0,
  ...more,
})

/** A MemoryStore whose answers wait until the test lets them go. */
function heldStore() {
  const memory = new MemoryStore()
  const waiting: (() => void)[] = []
  let hold = false
  const store: Store = {
    consume: (entries: readonly ConsumeEntry[], nowMs: number) => {
      const answer = (memory.consume(entries, nowMs) as AlgorithmResult[]).map((r) => ({ ...r }))
      if (!hold) return answer
      return new Promise((resolve) => waiting.push(() => resolve(answer)))
    },
    refund: (entries: readonly RefundEntry[], nowMs: number) => memory.refund(entries, nowMs),
  }
  return {
    store,
    hold: (on: boolean) => (hold = on),
    deliver: () => waiting.shift()!(),
  }
}

describe('adaptive rules: counterexamples found by the properties', () => {
  it('a request of cost 0 leaves no client holding a slot', () => {
    const limiter = createLimiter({
      rules: [{ id: 'a', algorithm: 'adaptive', adaptive: adaptive({ initialLimit: 2 }) }],
    })
    const d = limiter.check(facts('/', '203.0.113.7', 0)) as Decision
    limiter.release(d)
    expect(limiter.adaptive('a')).toMatchObject({ inFlight: 0, clients: 0 })
  })

  it('a store answer of the right length with an invalid number fails open holding no slot', () => {
    const memory = new MemoryStore()
    const store: Store = {
      consume: (entries: readonly ConsumeEntry[], nowMs: number) =>
        (memory.consume(entries, nowMs) as AlgorithmResult[]).map((r) => ({
          ...r,
          remaining: Number.NaN,
        })),
      refund: (entries: readonly RefundEntry[], nowMs: number) => memory.refund(entries, nowMs),
    }
    const limiter = createLimiter({
      store,
      logger: { debug() {}, info() {}, warn() {}, error() {} },
      rules: [
        { id: 'a', algorithm: 'adaptive', adaptive: adaptive() },
        { id: 'tb', limit: 100, window: '1m' },
      ],
    })
    expect(limiter.check(facts())).toMatchObject({ allowed: true, failedOpen: true })
    expect(limiter.adaptive('a')!.inFlight).toBe(0)
  })

  it('a shadow rule refused at the first look and fitting at the answer takes the slot it reports', async () => {
    const { store, hold, deliver } = heldStore()
    const limiter = createLimiter({
      store,
      rules: [
        { id: 'a', algorithm: 'adaptive', shadow: true, adaptive: adaptive() },
        { id: 'tb', limit: 100, window: '1m' },
      ],
    })
    const first = limiter.check(facts()) as Decision
    hold(true)
    const pending = limiter.check(facts())
    limiter.release(first)
    deliver()
    const second = await pending
    expect(second.outcomes[0]).toMatchObject({ rule: { id: 'a' }, allowed: true })
    expect(limiter.adaptive('a')!.inFlight).toBe(1)
    hold(false)
    // Full again: a third request would be refused; releasing the second frees the slot.
    expect((limiter.check(facts()) as Decision).outcomes[0]!.allowed).toBe(false)
    limiter.release(second)
    expect(limiter.adaptive('a')!.inFlight).toBe(0)
  })

  it('a settings change keeps the requests in flight counted against the new limit', () => {
    const rule = (target: string) =>
      ({
        id: 'a',
        algorithm: 'adaptive',
        adaptive: adaptive({ target, initialLimit: 2 }),
      }) as RuleInput
    const limiter = createLimiter({ rules: [rule('100ms')] })
    const held = [limiter.check(facts()), limiter.check(facts())] as Decision[]
    limiter.updateRules([rule('50ms')])
    expect(limiter.adaptive('a')).toMatchObject({ inFlight: 2, limit: 2 })
    expect((limiter.check(facts()) as Decision).allowed).toBe(false)
    for (const d of held) limiter.release(d)
    expect(limiter.adaptive('a')!.inFlight).toBe(0)
  })

  it('a rule removed and added back: the old requests’ releases leave the new gate alone', () => {
    const rules = [
      {
        id: 'fg',
        algorithm: 'adaptive',
        match: '/fg',
        adaptive: adaptive({ gate: 'g', initialLimit: 3 }),
      },
      {
        id: 'bg',
        algorithm: 'adaptive',
        match: '/bg',
        adaptive: adaptive({ gate: 'g', initialLimit: 3, priority: 'background' }),
      },
    ] as RuleInput[]
    const limiter = createLimiter({ rules })
    const old = limiter.check(facts('/bg')) as Decision
    limiter.updateRules([])
    limiter.updateRules(rules)
    expect(limiter.counters().inFlight.get('bg') ?? 0).toBe(0)
    const fresh = limiter.check(facts('/bg')) as Decision
    expect(limiter.counters().inFlight.get('bg')).toBe(1)
    limiter.release(old)
    expect(limiter.counters().inFlight.get('bg')).toBe(1)
    expect(limiter.adaptive('bg')!.inFlight).toBe(1)
    limiter.release(fresh)
    expect(limiter.counters().inFlight.get('bg') ?? 0).toBe(0)
  })

  it('two rules sharing a gate that match one request are not both admitted past its limit', () => {
    const limiter = createLimiter({
      rules: [
        { id: 'x', algorithm: 'adaptive', adaptive: adaptive({ gate: 'g', initialLimit: 2 }) },
        {
          id: 'y',
          algorithm: 'adaptive',
          match: '/both',
          adaptive: adaptive({ gate: 'g', initialLimit: 2 }),
        },
      ] as RuleInput[],
    })
    const one = limiter.check(facts('/')) as Decision
    expect(limiter.adaptive('x')!.inFlight).toBe(1)
    // Each rule's share fits the one slot left; both together do not.
    const both = limiter.check(facts('/both')) as Decision
    expect(both.allowed).toBe(false)
    expect(limiter.adaptive('x')!.inFlight).toBe(1)
    limiter.release(one)
    expect(limiter.adaptive('x')!.inFlight).toBe(0)
  })

  it('a request whose limit function answers after its adaptive rule left is still judged by its gate', async () => {
    const limiter = createLimiter({
      limits: { tb: () => Promise.resolve(100) },
      rules: [
        { id: 'a', algorithm: 'adaptive', adaptive: adaptive() },
        { id: 'tb', limit: 100, window: '1m' },
      ],
    })
    const first = await limiter.check(facts())
    expect(first.allowed).toBe(true)
    // Matched under the rules with the adaptive rule, decided after a swap took it away.
    const pending = limiter.check(facts())
    limiter.updateRules([{ id: 'tb', limit: 100, window: '1m' }])
    const second = await pending
    expect(second).toMatchObject({ allowed: false, status: 503, rule: { id: 'a' } })
    limiter.release(first)
    const third = await limiter.check(facts())
    expect(third.allowed).toBe(true)
  })

  it('a refusal by a gate that filled during the round trip stands when the store cannot refund', async () => {
    const memory = new MemoryStore()
    const store: Store = {
      consume: (entries: readonly ConsumeEntry[], nowMs: number) =>
        Promise.resolve(
          (memory.consume(entries, nowMs) as AlgorithmResult[]).map((r) => ({ ...r })),
        ),
      refund: () => {
        throw new Error('refund down')
      },
    }
    const limiter = createLimiter({
      store,
      logger: { debug() {}, info() {}, warn() {}, error() {} },
      rules: [
        { id: 'a', algorithm: 'adaptive', adaptive: adaptive() },
        { id: 'tb', limit: 100, window: '1m' },
      ],
    })
    // Both look at an empty gate of 1 before the store answers either.
    const [first, second] = await Promise.all([limiter.check(facts()), limiter.check(facts())])
    expect(first).toMatchObject({ allowed: true, failedOpen: false })
    expect(second).toMatchObject({ allowed: false, status: 503, failedOpen: false })
    expect(limiter.adaptive('a')!.inFlight).toBe(1)
  })

  it('an adaptive rule with a ban decides (it failed open on every request), and bans', () => {
    let now = 1_000_000
    const limiter = createLimiter({
      clock: () => now,
      rules: [
        {
          id: 'a',
          algorithm: 'adaptive',
          ban: { after: 2, within: '1m', for: '10m' },
          adaptive: adaptive(),
        },
      ],
    })
    const check = () => limiter.check(facts()) as Decision
    const held = check()
    expect(held).toMatchObject({ allowed: true, failedOpen: false })
    expect(check()).toMatchObject({ allowed: false, status: 503, failedOpen: false })
    expect(check()).toMatchObject({ allowed: false, failedOpen: false, banned: true })
    limiter.release(held)
    expect(limiter.adaptive('a')!.inFlight).toBe(0)
    // Banned: refused with a free slot, and holding none.
    expect(check()).toMatchObject({ allowed: false, banned: true })
    expect(limiter.adaptive('a')!.inFlight).toBe(0)
    now += 11 * 60_000
    expect(check()).toMatchObject({ allowed: true, failedOpen: false })
  })

  it('a request pending across a settings change is decided by the limit in force', async () => {
    const { store, hold, deliver } = heldStore()
    const rules = (initialLimit: number) => [
      { id: 'a', algorithm: 'adaptive', adaptive: adaptive({ initialLimit }) } as RuleInput,
      { id: 'tb', limit: 100, window: '1m' },
    ]
    const limiter = createLimiter({ store, rules: rules(3) })
    const first = await limiter.check(facts())
    hold(true)
    const pending = limiter.check(facts())
    // The new limit, 1, is full with the request admitted before.
    limiter.updateRules(rules(1))
    deliver()
    expect(await pending).toMatchObject({ allowed: false, status: 503, rule: { id: 'a' } })
    expect(limiter.adaptive('a')).toMatchObject({ limit: 1, inFlight: 1 })
    limiter.release(first)
    expect(limiter.adaptive('a')!.inFlight).toBe(0)
  })
})

describe('adaptive rules: a rules swap while the store decides', () => {
  it('units a refused request was charged before another rule left and came back are not credited to its new state', async () => {
    const memory = new MemoryStore()
    const waiting: (() => void)[] = []
    const refunded: RefundEntry[] = []
    // Drops the state of rules that leave, as MemoryStore and SyncedStore do.
    const store: Store = {
      consume: (entries, nowMs) => {
        const answer = memory.consume(entries, nowMs).map((r) => ({ ...r }))
        return new Promise((resolve) => waiting.push(() => resolve(answer)))
      },
      refund: (entries, nowMs) => {
        refunded.push(...entries)
        memory.refund(entries, nowMs)
      },
      retain: (ids) => memory.retain(ids),
    }
    const gate: RuleInput = { id: 'a', algorithm: 'adaptive', adaptive: adaptive() }
    const tb: RuleInput = { id: 'tb', limit: 100, window: '1m' }
    const limiter = createLimiter({ store, rules: [gate, tb] })
    // Both fit the gate of one slot at the first look; the store charges 'tb' for both.
    const first = limiter.check(facts())
    const second = limiter.check(facts())
    limiter.updateRules([gate])
    limiter.updateRules([gate, tb])
    waiting.shift()!()
    expect((await first).allowed).toBe(true)
    waiting.shift()!()
    // The gate is full at the second answer: refused, and its 'tb' unit went with the old state.
    expect((await second).allowed).toBe(false)
    expect(refunded).toEqual([])
  })
})
