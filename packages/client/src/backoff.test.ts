import { describe, expect, it } from 'vitest'
import { backoffCeilingMs, backoffDelayMs } from './backoff.js'

describe('backoff', () => {
  it('doubles the ceiling per retry up to the cap', () => {
    expect([0, 1, 2, 3, 4, 5].map((r) => backoffCeilingMs(r, 100, 1000))).toEqual([
      100, 200, 400, 800, 1000, 1000,
    ])
    expect(backoffCeilingMs(5000, 100, 1000)).toBe(1000)
  })

  it('full jitter scales the ceiling by the random draw', () => {
    expect(backoffDelayMs(2, { baseMs: 100, capMs: 1000, random: () => 0.25 })).toBe(100)
    expect(backoffDelayMs(2, { baseMs: 100, capMs: 1000, random: () => 0 })).toBe(0)
  })

  it('clamps a random source outside [0, 1)', () => {
    expect(backoffDelayMs(0, { baseMs: 100, random: () => 7 })).toBe(100)
    expect(backoffDelayMs(0, { baseMs: 100, random: () => -1 })).toBe(0)
  })

  it('without jitter waits the full ceiling', () => {
    expect(backoffDelayMs(1, { baseMs: 100, jitter: 'none', random: () => 0 })).toBe(200)
  })
})
