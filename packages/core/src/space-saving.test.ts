import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { SpaceSaving } from './space-saving.js'

const NUM_RUNS = Number(process.env.FG_PROPERTY_RUNS ?? 300)

/** Streams with a few heavy keys among many light ones, so both regimes are exercised. */
const streams = fc.record({
  capacity: fc.integer({ min: 1, max: 12 }),
  keys: fc.array(
    fc.oneof(
      { weight: 3, arbitrary: fc.constantFrom('a', 'b', 'c') },
      { weight: 2, arbitrary: fc.integer({ min: 0, max: 60 }).map((i) => `k${i}`) },
    ),
    { maxLength: 400, size: 'max' },
  ),
  weights: fc.array(fc.integer({ min: 1, max: 3 }), { maxLength: 400, size: 'max' }),
})

describe('SpaceSaving against an exact counter', () => {
  it('keeps every key above n/capacity, over-estimates by at most its error, and bounds the error by the smallest count', () => {
    fc.assert(
      fc.property(streams, ({ capacity, keys, weights }) => {
        const summary = new SpaceSaving(capacity)
        const exact = new Map<string, number>()
        let n = 0
        keys.forEach((k, i) => {
          const w = weights[i] ?? 1
          summary.add(k, w)
          exact.set(k, (exact.get(k) ?? 0) + w)
          n += w
        })
        const top = summary.top()
        expect(summary.total).toBe(n)
        expect(top.length).toBeLessThanOrEqual(capacity)
        expect(top.length).toBe(Math.min(capacity, exact.size))
        // The counts always sum to the additions: nothing is lost, only attributed.
        expect(top.reduce((s, h) => s + h.count, 0)).toBe(n)
        const monitored = new Map(top.map((h) => [h.key, h]))
        const min = summary.minCount
        for (const h of top) {
          const truth = exact.get(h.key) ?? 0
          expect(h.count).toBeGreaterThanOrEqual(truth)
          expect(h.count - h.error).toBeLessThanOrEqual(truth)
          expect(h.error).toBeLessThanOrEqual(min)
        }
        expect(min).toBeLessThanOrEqual(n / capacity)
        for (const [key, truth] of exact) {
          if (truth > n / capacity) expect(monitored.has(key)).toBe(true)
        }
        // Sorted, largest first.
        for (let i = 1; i < top.length; i++) {
          expect(top[i - 1]!.count).toBeGreaterThanOrEqual(top[i]!.count)
        }
      }),
      { numRuns: NUM_RUNS },
    )
  })

  it('is exact while it has room', () => {
    const s = new SpaceSaving(3)
    for (const k of ['x', 'y', 'x', 'z', 'x', 'y']) s.add(k)
    expect(s.top()).toEqual([
      { key: 'x', count: 3, error: 0 },
      { key: 'y', count: 2, error: 0 },
      { key: 'z', count: 1, error: 0 },
    ])
    expect(s.top(1)).toEqual([{ key: 'x', count: 3, error: 0 }])
    expect(s.minCount).toBe(1)
  })

  it('a newcomer takes the smallest slot and inherits its count as error', () => {
    const s = new SpaceSaving(2)
    for (const k of ['a', 'a', 'a', 'b', 'c']) s.add(k)
    expect(s.top()).toEqual([
      { key: 'a', count: 3, error: 0 },
      { key: 'c', count: 2, error: 1 },
    ])
  })

  it('refuses a capacity that is not a positive integer', () => {
    expect(() => new SpaceSaving(0)).toThrow(/capacity: expected a positive integer, got 0/)
    expect(() => new SpaceSaving(1.5)).toThrow(/capacity/)
  })
})
