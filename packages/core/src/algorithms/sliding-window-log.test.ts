import { describe, expect, it } from 'vitest'
import { referenceModel } from '../testing/reference-models.js'
import { runner } from './harness.test-util.js'
import { slidingWindowLog } from './sliding-window-log.js'

const p = { limit: 10, windowMs: 1000, burst: 10 }

describe('slidingWindowLog', () => {
  it('refuses the fixed window boundary burst: 0.90 … 0.99 s pass, 1.00 and 1.01 s do not', () => {
    const run = runner(slidingWindowLog, p)
    for (let t = 900; t <= 990; t += 10) expect(run.consume(1, t).allowed, `at ${t}`).toBe(true)
    expect(run.consume(1, 1000)).toMatchObject({ allowed: false, retryAfterMs: 900 })
    expect(run.consume(1, 1010)).toMatchObject({ allowed: false, retryAfterMs: 890 })
  })

  it('counts requests in the same millisecond separately', () => {
    const run = runner(slidingWindowLog, { limit: 3, windowMs: 1000, burst: 3 })
    expect(run.consume(1, 5).allowed).toBe(true)
    expect(run.consume(1, 5).allowed).toBe(true)
    expect(run.consume(1, 5).allowed).toBe(true)
    expect(run.consume(1, 5).allowed).toBe(false)
  })

  it.each([
    [1, 3],
    [10, 12],
    [100, 102],
  ])('limit %i needs %i slots (a ring of limit timestamps + count + head)', (limit, size) => {
    expect(slidingWindowLog.stateSize({ limit, windowMs: 1000, burst: limit })).toBe(size)
  })

  it('stays exact while the ring wraps around many times', () => {
    const q = { limit: 4, windowMs: 100, burst: 4 }
    const run = runner(slidingWindowLog, q)
    const ref = referenceModel('sliding-window-log').create(q)
    let admitted = 0
    for (let t = 0; t < 3000; t += 7) {
      const cost = t % 3 === 0 ? 2 : 1
      const got = run.consume(cost, t)
      expect(got, `at ${t}`).toEqual(ref.consume(cost, t))
      if (got.allowed) admitted++
    }
    // The ring (4 slots) has wrapped around many times over.
    expect(admitted).toBeGreaterThan(40)
  })

  it('a cost of c takes c entries and a cost above the limit never passes', () => {
    const run = runner(slidingWindowLog, { limit: 5, windowMs: 1000, burst: 5 })
    expect(run.consume(6, 0)).toMatchObject({ allowed: false, remaining: 5 })
    expect(run.consume(3, 0)).toMatchObject({ allowed: true, remaining: 2 })
    expect(run.consume(3, 10)).toMatchObject({ allowed: false, remaining: 2, retryAfterMs: 990 })
    expect(run.consume(2, 10)).toMatchObject({ allowed: true, remaining: 0 })
  })

  it('treats a clock that went backwards as standing still', () => {
    const run = runner(slidingWindowLog, { limit: 2, windowMs: 1000, burst: 2 })
    run.consume(2, 10_000)
    expect(run.consume(1, 9000)).toMatchObject({ allowed: false, retryAfterMs: 1000 })
    expect(run.consume(1, 11_000).allowed).toBe(true)
  })

  it('forgets a log whose newest entry lies past the horizon (the clock stepped back further)', () => {
    const run = runner(slidingWindowLog, { limit: 2, windowMs: 1000, burst: 2 })
    run.consume(2, 10_000)
    expect(run.consume(1, 3000)).toMatchObject({ allowed: true, remaining: 1 })
    expect(run.consume(1, 3001)).toMatchObject({ allowed: true, remaining: 0 })
    expect(run.consume(1, 3002)).toMatchObject({ allowed: false, retryAfterMs: 998 })
  })
})
