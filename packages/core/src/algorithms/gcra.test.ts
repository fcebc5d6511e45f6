import { describe, expect, it } from 'vitest'
import { gcra } from './gcra.js'
import { runner } from './harness.test-util.js'

describe('gcra', () => {
  it('runs the token-bucket walk-through exactly', () => {
    const run = runner(gcra, { limit: 10, windowMs: 1000, burst: 10 })
    expect(run.consume(6, 300)).toMatchObject({ allowed: true, remaining: 4, resetMs: 600 })
    expect(run.consume(5, 500)).toMatchObject({ allowed: true, remaining: 1, resetMs: 900 })
    expect(run.consume(1, 500)).toMatchObject({ allowed: true, remaining: 0 })
    expect(run.consume(10, 1500)).toMatchObject({ allowed: true, remaining: 0 })
    expect(run.consume(11, 50_000)).toMatchObject({ allowed: false, remaining: 10 })
  })

  it.each([
    // burst, requests at the same instant that pass
    [1, 1],
    [3, 3],
    [10, 10],
  ])('burst %i lets %i requests through at once, then one per emission interval', (burst, n) => {
    const run = runner(gcra, { limit: 10, windowMs: 1000, burst })
    for (let i = 0; i < n; i++) expect(run.consume(1, 7000).allowed).toBe(true)
    expect(run.consume(1, 7000)).toMatchObject({ allowed: false, retryAfterMs: 100 })
    expect(run.consume(1, 7100).allowed).toBe(true)
  })

  it('keeps sub-millisecond precision at epoch-scale clocks', () => {
    const run = runner(gcra, { limit: 3, windowMs: 1000, burst: 3 })
    const t0 = 1_763_776_543_210
    for (let i = 0; i < 3; i++) expect(run.consume(1, t0).allowed).toBe(true)
    expect(run.consume(3, t0 + 999).allowed).toBe(false)
    expect(run.consume(3, t0 + 1000)).toMatchObject({ allowed: true, remaining: 0 })
  })

  it('treats a clock that went backwards as standing still', () => {
    const run = runner(gcra, { limit: 10, windowMs: 1000, burst: 2 })
    run.consume(2, 10_000)
    // Not "ahead by 1000 ms more": the same answer as at 10 000 ms.
    expect(run.consume(1, 9000)).toMatchObject({ allowed: false, retryAfterMs: 100, resetMs: 200 })
  })
})
