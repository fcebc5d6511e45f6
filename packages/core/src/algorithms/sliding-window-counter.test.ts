import { describe, expect, it } from 'vitest'
import { runner } from './harness.test-util.js'
import { slidingWindowCounter } from './sliding-window-counter.js'

const p = { limit: 10, windowMs: 1000, burst: 10 }

describe('slidingWindowCounter', () => {
  it.each([
    // previous window count, time into the current window, requests that then pass
    [10, 0, 0],
    [10, 100, 1],
    [10, 500, 5],
    [10, 999, 9],
    [4, 500, 8],
    [0, 0, 10],
  ])('prev %i, %i ms into the window: %i more pass', (prev, into, n) => {
    const run = runner(slidingWindowCounter, p)
    for (let i = 0; i < prev; i++) run.consume(1, 500)
    let passed = 0
    while (passed <= 10 && run.consume(1, 1000 + into).allowed) passed++
    expect(passed).toBe(n)
  })

  it('forgets everything two windows later', () => {
    const run = runner(slidingWindowCounter, p)
    run.consume(10, 100)
    expect(run.consume(1, 1999).allowed).toBe(true)
    expect(run.consume(10, 3000)).toMatchObject({ allowed: true, remaining: 0 })
  })

  it('uses three slots whatever the limit', () => {
    expect(slidingWindowCounter.stateSize({ limit: 1e6, windowMs: 60_000, burst: 1e6 })).toBe(3)
  })

  it('never admits more when the clock goes backwards', () => {
    const run = runner(slidingWindowCounter, p)
    for (let i = 0; i < 10; i++) run.consume(1, 500)
    run.consume(5, 1500)
    expect(run.consume(1, 200).allowed).toBe(false)
    expect(run.consume(1, 1200).allowed).toBe(false)
  })
})
