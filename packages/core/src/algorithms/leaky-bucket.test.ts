import { describe, expect, it } from 'vitest'
import { runner } from './harness.test-util.js'
import { leakyBucket } from './leaky-bucket.js'
import { tokenBucket } from './token-bucket.js'

describe('leakyBucket', () => {
  it('as a meter (no wait allowed) answers exactly like a token bucket', () => {
    const p = { limit: 7, windowMs: 900, burst: 4 }
    const lb = runner(leakyBucket, p)
    const tb = runner(tokenBucket, p)
    for (let t = 0, i = 0; i < 200; i++, t += (i * 37) % 211) {
      const cost = 1 + (i % 3)
      expect(lb.consume(cost, t)).toEqual(tb.consume(cost, t))
    }
  })

  it('as a shaper spaces requests at the drain rate', () => {
    const run = runner(leakyBucket, { limit: 5, windowMs: 1000, burst: 4 })
    const waits = Array.from({ length: 5 }, () => run.consume(1, 10_000, 2000))
    expect(waits.map((r) => r.allowed)).toEqual([true, true, true, true, false])
    expect(waits.map((r) => r.waitMs)).toEqual([0, 200, 400, 600, 0])
    expect(waits[4]!.retryAfterMs).toBe(200)
  })

  it.each([
    // maxWaitMs, allowed, waitMs, retryAfterMs with 3 units of water ahead (300 ms at 10/s)
    [1000, true, 300, 0],
    [300, true, 300, 0],
    [299, false, 0, 1],
    [100, false, 0, 200],
  ])('maxWaitMs %i → allowed %s, wait %i, retry %i', (maxWaitMs, allowed, waitMs, retryAfterMs) => {
    const run = runner(leakyBucket, { limit: 10, windowMs: 1000, burst: 10 })
    run.consume(3, 0)
    expect(run.consume(1, 0, maxWaitMs)).toMatchObject({ allowed, waitMs, retryAfterMs })
  })
})
