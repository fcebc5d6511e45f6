import { describe, expect, it } from 'vitest'
import { CONCURRENCY_RETRY_AFTER_MS, concurrency } from './concurrency.js'
import { runner } from './harness.test-util.js'

const p = { limit: 2, windowMs: 1000, burst: 2 }

describe('concurrency', () => {
  it('takes slots until none is left, and release frees them', () => {
    const run = runner(concurrency, p)
    expect(run.consume(1, 0)).toMatchObject({ allowed: true, remaining: 1, resetMs: 0 })
    expect(run.consume(1, 0)).toMatchObject({ allowed: true, remaining: 0 })
    expect(run.consume(1, 0)).toMatchObject({
      allowed: false,
      remaining: 0,
      retryAfterMs: CONCURRENCY_RETRY_AFTER_MS,
      resetMs: 0,
    })
    run.refund(1, 0)
    expect(run.consume(1, 0).allowed).toBe(true)
  })

  it.each([
    // slots taken, slots released, idle?
    [0, 0, true],
    [1, 0, false],
    [2, 2, true],
    [2, 5, true], // releasing more than held never goes negative
  ])('%i taken, %i released → idle %s', (taken, released, idle) => {
    const run = runner(concurrency, p)
    for (let i = 0; i < taken; i++) run.consume(1, 0)
    for (let i = 0; i < released; i++) run.refund(1, 0)
    expect(run.idleAtMs(42)).toBe(idle ? 42 : Number.POSITIVE_INFINITY)
    expect(run.state[run.offset]).toBeGreaterThanOrEqual(0)
  })

  it('snaps fractional residue to zero so the key can idle', () => {
    const run = runner(concurrency, { limit: 1, windowMs: 1000, burst: 1 })
    run.consume(0.1, 0)
    run.consume(0.2, 0)
    run.refund(0.3, 0)
    expect(run.idleAtMs(7)).toBe(7)
  })
})
