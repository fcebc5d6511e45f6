import { describe, expect, it } from 'vitest'
import type { Algorithm } from './algorithm.js'
import { algorithms } from './registry.js'
import { runner } from './harness.test-util.js'

const p = { limit: 10, windowMs: 1000, burst: 10 }
const debtors: Algorithm[] = [algorithms['token-bucket'], algorithms.gcra]

describe.each(debtors)('$name charge', (algorithm) => {
  it('records units unconditionally: past the capacity the state is in debt', () => {
    const run = runner(algorithm, p)
    run.charge(25, 0)
    // 25 units against a capacity of 10: 15 in debt, then 1 more to pass = 1600 ms of refill.
    expect(run.consume(1, 0)).toMatchObject({ allowed: false, remaining: 0, retryAfterMs: 1600 })
    expect(run.consume(1, 1599).allowed).toBe(false)
    expect(run.consume(1, 1600)).toMatchObject({ allowed: true, remaining: 0 })
    expect(run.idleAtMs(1600)).toBe(2600)
  })

  it('within the capacity, a charge leaves the same state as an admitted request', () => {
    const charged = runner(algorithm, p)
    const consumed = runner(algorithm, p)
    for (const [cost, at] of [
      [3, 100],
      [4, 250],
      [2, 1900],
    ] as const) {
      charged.charge(cost, at)
      expect(consumed.consume(cost, at).allowed).toBe(true)
      expect(charged.snapshot()).toEqual(consumed.snapshot())
    }
  })

  it('drains what was already refilled before adding, and never moves time backwards', () => {
    const run = runner(algorithm, p)
    run.consume(10, 0)
    run.charge(5, 500) // 5 refilled by 500 ms: 5 + 5 = 10 used, no debt
    expect(run.consume(1, 500).allowed).toBe(false)
    run.charge(1, 400) // an older clock reading drains nothing
    expect(run.consume(1, 600)).toMatchObject({ allowed: false, retryAfterMs: 100 })
  })
})

describe('charge', () => {
  it('exists only where debt has a meaning (a level that drains)', () => {
    const withCharge = Object.values(algorithms)
      .filter((a) => a.charge !== undefined)
      .map((a) => a.name)
    expect(withCharge.sort()).toEqual(['gcra', 'token-bucket'])
  })
})
