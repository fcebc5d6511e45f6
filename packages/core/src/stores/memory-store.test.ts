import { describe, expect, it } from 'vitest'
import type { ConsumeEntry } from './store.js'
import { testRule } from '../testing/test-rule.js'
import { describeStoreConformance } from '../testing/conformance.js'
import { MemoryStore } from './memory-store.js'

describeStoreConformance('MemoryStore', () => new MemoryStore())

const one = (rule: ReturnType<typeof testRule>, key: string, cost = 1): ConsumeEntry[] => [
  { rule, key, cost, maxWaitMs: 0, shadow: false },
]

describe('MemoryStore', () => {
  it('charge puts a client into debt that later requests pay back', () => {
    const store = new MemoryStore()
    const rule = testRule('token-bucket', 10, 1000)
    store.charge(rule, 'a', 15, 0)
    expect(store.size).toBe(1)
    expect(store.consume(one(rule, 'a'), 0)[0]).toMatchObject({ allowed: false, retryAfterMs: 600 })
    expect(store.consume(one(rule, 'a'), 600)[0]!.allowed).toBe(true)
    // Other keys of the rule are untouched.
    expect(store.consume(one(rule, 'b', 10), 0)[0]!.allowed).toBe(true)
  })

  it('charge refuses an algorithm without debt, naming the rule and the algorithm', () => {
    const store = new MemoryStore()
    const rule = testRule('fixed-window', 10, 1000, { id: 'per-ip' })
    expect(() => store.charge(rule, 'a', 1, 0)).toThrow(
      /rule per-ip: algorithm fixed-window cannot be charged/,
    )
  })

  it('answers synchronously: no promise on the hot path', () => {
    const store = new MemoryStore()
    const result = store.consume(one(testRule('token-bucket', 5, 1000), 'a'), 0)
    expect(Array.isArray(result)).toBe(true)
  })

  it('sweeps idle keys as new keys arrive, without a timer per key', () => {
    const store = new MemoryStore()
    const rule = testRule('fixed-window', 5, 1000)
    for (let i = 0; i < 1000; i++) store.consume(one(rule, `old${i}`), 0)
    expect(store.size).toBe(1000)
    // A minute after the window every old key has been idle long enough; new traffic sweeps them.
    for (let i = 0; i < 1000; i++) store.consume(one(rule, `new${i}`), 62_000)
    expect(store.size).toBeLessThan(1100)
  })

  it('leaves recently idle state alone, so busy clients of fast rules do not churn', () => {
    const store = new MemoryStore()
    const rule = testRule('token-bucket', 1000, 1000)
    for (let i = 0; i < 100; i++) store.consume(one(rule, `c${i}`), 0)
    for (let i = 0; i < 100; i++) store.consume(one(rule, `d${i}`), 50)
    expect(store.size).toBe(200)
  })

  it('holds its hard cap under a flood of random keys', () => {
    const store = new MemoryStore({ maxKeys: 1000 })
    const rule = testRule('token-bucket', 10, 60_000)
    for (let i = 0; i < 50_000; i++) store.consume(one(rule, `rnd${Math.random()}`), i)
    expect(store.size).toBeLessThanOrEqual(1000)
  })

  it('never evicts a client that is over its limit to make room', () => {
    const store = new MemoryStore({ maxKeys: 100 })
    const rule = testRule('token-bucket', 3, 3_600_000)
    for (let i = 0; i < 3; i++) store.consume(one(rule, 'abuser'), 0)
    expect(store.consume(one(rule, 'abuser'), 0)[0]!.allowed).toBe(false)
    for (let i = 0; i < 20_000; i++) store.consume(one(rule, `flood${i}`), 1)
    expect(store.consume(one(rule, 'abuser'), 2)[0]!.allowed).toBe(false)
  })

  it('refuses new keys when every key is throttled, instead of growing or resetting', () => {
    const store = new MemoryStore({ maxKeys: 10 })
    const rule = testRule('token-bucket', 1, 3_600_000)
    for (let i = 0; i < 10; i++) store.consume(one(rule, `k${i}`), 0)
    expect(store.size).toBe(10)
    expect(store.consume(one(rule, 'newcomer-1'), 0)[0]!.allowed).toBe(false)
    expect(store.consume(one(rule, 'newcomer-2'), 0)[0]!.allowed).toBe(false)
    expect(store.size).toBe(10)
    expect(store.overflowed).toBe(2)
    expect(store.consume(one(rule, 'k0'), 0)[0]!.allowed).toBe(false)
  })

  it('treats keys such as __proto__ and constructor as plain keys', () => {
    const store = new MemoryStore()
    const rule = testRule('fixed-window', 1, 1000)
    for (const key of ['__proto__', 'constructor', 'toString', 'hasOwnProperty']) {
      expect(store.consume(one(rule, key), 0)[0]!.allowed).toBe(true)
      expect(store.consume(one(rule, key), 0)[0]!.allowed).toBe(false)
    }
    expect(({} as Record<string, unknown>).polluted).toBeUndefined()
  })

  it('drops the state of rules no longer in force on retain()', () => {
    const store = new MemoryStore()
    const a = testRule('fixed-window', 1, 1000)
    const b = testRule('fixed-window', 1, 1000)
    store.consume(one(a, 'x'), 0)
    store.consume(one(b, 'x'), 0)
    store.retain(new Set([a.stateId]))
    expect(store.size).toBe(1)
    expect(store.consume(one(a, 'x'), 0)[0]!.allowed).toBe(false)
    expect(store.consume(one(b, 'x'), 0)[0]!.allowed).toBe(true)
  })

  it('refuses a bad cap by name', () => {
    expect(() => new MemoryStore({ maxKeys: 0 })).toThrow(
      /MemoryStore maxKeys: expected an integer from 1 to 16777215, got 0/,
    )
    expect(() => new MemoryStore({ maxKeys: 2 ** 24 })).toThrow(/maxKeys/)
  })
})
