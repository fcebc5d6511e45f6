import fc from 'fast-check'
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

  it('property: any retry, base, cap and random draw give a delay in [0, cap], never NaN', () => {
    const anyNumber = fc.oneof(
      fc.double(),
      fc.integer({ min: -5, max: 5000 }),
      fc.constantFrom(NaN, Infinity, -Infinity, 0, -0),
    )
    fc.assert(
      fc.property(
        anyNumber,
        anyNumber,
        fc.double({ min: 0, max: 1e9, noNaN: true }),
        anyNumber,
        fc.constantFrom('full' as const, 'none' as const),
        (retry, baseMs, capMs, draw, jitter) => {
          const delay = backoffDelayMs(retry, { baseMs, capMs, jitter, random: () => draw })
          expect(Number.isNaN(delay)).toBe(false)
          expect(delay).toBeGreaterThanOrEqual(0)
          expect(delay).toBeLessThanOrEqual(capMs)
        },
      ),
      { numRuns: 2000 },
    )
  })

  it('a base of 0 waits 0 at every retry, however many came before', () => {
    expect(backoffCeilingMs(1024, 0, 1000)).toBe(0)
    expect(backoffDelayMs(5000, { baseMs: 0, jitter: 'none' })).toBe(0)
  })
})
