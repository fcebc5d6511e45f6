import { describe, expect, it } from 'vitest'
import { fixedWindow } from './fixed-window.js'
import { runner } from './harness.test-util.js'

const p = { limit: 10, windowMs: 1000, burst: 10 }

describe('fixedWindow', () => {
  it('admits 2 × limit across a window boundary (its known weakness)', () => {
    const run = runner(fixedWindow, p)
    let admitted = 0
    for (let t = 995; t < 1005; t++) {
      for (let i = 0; i < 2; i++) if (run.consume(1, t).allowed) admitted++
    }
    expect(admitted).toBe(20)
  })

  it.each([
    // now, expected resetMs for a fresh key's first request
    [0, 1000],
    [1, 999],
    [999, 1],
    [1000, 1000],
    [1_763_776_543_210, 790],
  ])(
    'aligns windows to multiples of windowMs: at %i the window resets in %i ms',
    (now, resetMs) => {
      expect(runner(fixedWindow, p).consume(1, now)).toMatchObject({
        allowed: true,
        remaining: 9,
        resetMs,
      })
    },
  )

  it('carries a reservation over into the following windows', () => {
    const run = runner(fixedWindow, { limit: 2, windowMs: 1000, burst: 2 })
    run.consume(2, 0)
    expect(run.consume(2, 0, 5000)).toMatchObject({ allowed: true, waitMs: 1000 })
    expect(run.consume(1, 0, 5000)).toMatchObject({ allowed: true, waitMs: 2000 })
    // Window 1000..2000 is taken by the first reservation.
    expect(run.consume(1, 1500)).toMatchObject({ allowed: false, retryAfterMs: 500 })
    // Window 2000..3000 holds the second one (1 unit): one unit of room left.
    expect(run.consume(1, 2000)).toMatchObject({ allowed: true, remaining: 0 })
  })

  it('stays in the stored window when the clock goes backwards', () => {
    const run = runner(fixedWindow, p)
    run.consume(10, 5500)
    expect(run.consume(1, 4200)).toMatchObject({ allowed: false, remaining: 0 })
    expect(run.consume(1, 6000).allowed).toBe(true)
  })
})
