import { describe, expect, it } from 'vitest'
import { runner } from './harness.test-util.js'
import { tokenBucket } from './token-bucket.js'

const p = { limit: 10, windowMs: 1000, burst: 10 }

describe('tokenBucket', () => {
  it('runs the walk-through as one sequence', () => {
    const run = runner(tokenBucket, p)
    const rows: [number, number, boolean, number, number][] = [
      [300, 6, true, 4, 0],
      [500, 5, true, 1, 0],
      [500, 2, false, 1, 100],
      [500, 1, true, 0, 0],
      [1500, 10, true, 0, 0],
      [99_000, 11, false, 10, 100],
      [99_000, 10, true, 0, 0],
    ]
    for (const [at, cost, allowed, remaining, retryAfterMs] of rows) {
      expect(run.consume(cost, at), `at ${at} cost ${cost}`).toMatchObject({
        allowed,
        remaining,
        retryAfterMs,
      })
    }
  })

  it('keeps exact arithmetic at epoch-scale clocks with a fractional rate', () => {
    const q = { limit: 3, windowMs: 1000, burst: 3 }
    const run = runner(tokenBucket, q)
    const t0 = 1_763_776_543_210
    expect(run.consume(3, t0).allowed).toBe(true)
    // One token every 333.33 ms: not yet at +333, yes at +334.
    expect(run.consume(1, t0 + 333)).toMatchObject({ allowed: false, retryAfterMs: 1 })
    expect(run.consume(1, t0 + 334).allowed).toBe(true)
    // Exactly 2 tokens back 1000 ms after the start (1 taken at +334).
    expect(run.consume(2, t0 + 1000)).toMatchObject({ allowed: true, remaining: 0 })
  })

  it('refills nothing when the clock goes backwards', () => {
    const run = runner(tokenBucket, p)
    run.consume(10, 5000)
    expect(run.consume(1, 4000)).toMatchObject({ allowed: false, remaining: 0, retryAfterMs: 100 })
    expect(run.consume(1, 5100).allowed).toBe(true)
  })

  it('a reservation goes into debt and a refund gives it back', () => {
    const run = runner(tokenBucket, p)
    run.consume(10, 0)
    expect(run.consume(3, 0, 500)).toMatchObject({ allowed: true, waitMs: 300, remaining: 0 })
    run.refund(3, 0)
    expect(run.consume(1, 100).allowed).toBe(true)
  })
})
