import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import type { RuleAdaptive } from '../rules/rule.js'
import { nextControlState } from './control-law.js'

const settingsArb: fc.Arbitrary<RuleAdaptive> = fc
  .record({
    percentile: fc.double({ min: 50, max: 99.9, noNaN: true }),
    target: fc.option(fc.integer({ min: 1, max: 10_000 }), { nil: undefined }),
    tolerance: fc.double({ min: 1.05, max: 10, noNaN: true }),
    windowMs: fc.integer({ min: 100, max: 60_000 }),
    minLimit: fc.integer({ min: 1, max: 50 }),
    span: fc.integer({ min: 0, max: 500 }),
    smoothing: fc.double({ min: 0.01, max: 1, noNaN: true }),
    maxDecrease: fc.double({ min: 0.01, max: 0.99, noNaN: true }),
    maxIncrease: fc.double({ min: 0.01, max: 10, noNaN: true }),
    minSamples: fc.integer({ min: 1, max: 100 }),
    reserve: fc.double({ min: 0, max: 0.9, noNaN: true }),
  })
  .map((r) => ({
    percentile: r.percentile,
    targetMs: r.target,
    tolerance: r.tolerance,
    windowMs: r.windowMs,
    minLimit: r.minLimit,
    maxLimit: r.minLimit + r.span,
    initialLimit: r.minLimit,
    smoothing: r.smoothing,
    maxDecrease: r.maxDecrease,
    maxIncrease: r.maxIncrease,
    minSamples: r.minSamples,
    reserve: r.reserve,
    gate: undefined,
    priority: 'normal' as const,
  }))

const caseArb = settingsArb.chain((s) =>
  fc.record({
    s: fc.constant(s),
    state: fc.record({
      limit: fc.double({ min: s.minLimit, max: s.maxLimit, noNaN: true }),
      baselineMs: fc.oneof(fc.constant(0), fc.double({ min: 0.5, max: 10_000, noNaN: true })),
    }),
    stats: fc.record({
      samples: fc.integer({ min: 0, max: 1000 }),
      percentileMs: fc.double({ min: 0, max: 100_000, noNaN: true }),
      peakInFlight: fc.integer({ min: 0, max: 2000 }),
      inFlight: fc.integer({ min: 0, max: 2000 }),
      overdue: fc.boolean(),
    }),
  }),
)

const EPS = 1e-9

describe('nextControlState: invariants', () => {
  it('keeps the limit within minLimit and maxLimit', () => {
    fc.assert(
      fc.property(caseArb, ({ s, state, stats }) => {
        const { limit } = nextControlState(state, stats, s)
        expect(limit).toBeGreaterThanOrEqual(s.minLimit)
        expect(limit).toBeLessThanOrEqual(s.maxLimit)
      }),
    )
  })

  it('moves nothing on a window without enough responses, unless it stalled', () => {
    fc.assert(
      fc.property(caseArb, ({ s, state, stats }) => {
        const few = stats.samples === 0 || (stats.samples < s.minSamples && !stats.overdue)
        const stalled = stats.samples === 0 && stats.inFlight >= Math.floor(state.limit)
        fc.pre(few && !stalled)
        expect(nextControlState(state, stats, s)).toEqual(state)
      }),
    )
  })

  it('halves at most (by maxDecrease) when nothing completes while the limit is full', () => {
    fc.assert(
      fc.property(caseArb, ({ s, state, stats }) => {
        const stalledStats = { ...stats, samples: 0, inFlight: Math.ceil(state.limit) }
        const { limit } = nextControlState(state, stalledStats, s)
        expect(limit).toBeCloseTo(Math.max(s.minLimit, state.limit * (1 - s.maxDecrease)), 6)
      }),
    )
  })

  it('moves by at most its step bounds, smoothed', () => {
    fc.assert(
      fc.property(caseArb, ({ s, state, stats }) => {
        const { limit } = nextControlState(state, stats, s)
        const low = Math.max(s.minLimit, state.limit * (1 - s.maxDecrease * s.smoothing))
        const high = Math.min(s.maxLimit, state.limit * (1 + s.maxIncrease * s.smoothing))
        // A stalled window falls by the whole maxDecrease.
        const stalled = stats.samples === 0
        expect(limit).toBeGreaterThanOrEqual(
          (stalled ? Math.max(s.minLimit, state.limit * (1 - s.maxDecrease)) : low) - EPS,
        )
        expect(limit).toBeLessThanOrEqual(high + EPS)
      }),
    )
  })

  it('with a target: falls (or holds) when the percentile is over it, rises (or holds) when under', () => {
    fc.assert(
      fc.property(caseArb, ({ s, state, stats }) => {
        fc.pre(s.targetMs !== undefined && stats.samples >= s.minSamples)
        const { limit } = nextControlState(state, stats, s)
        if (stats.percentileMs > s.targetMs) expect(limit).toBeLessThanOrEqual(state.limit + EPS)
        if (stats.percentileMs < s.targetMs) expect(limit).toBeGreaterThanOrEqual(state.limit - EPS)
      }),
    )
  })

  it('does not rise past twice the peak in flight when the traffic did not fill the limit', () => {
    fc.assert(
      fc.property(caseArb, ({ s, state, stats }) => {
        fc.pre(stats.peakInFlight < Math.floor(state.limit))
        const { limit } = nextControlState(state, stats, s)
        expect(limit).toBeLessThanOrEqual(Math.max(state.limit, 2 * stats.peakInFlight) + EPS)
      }),
    )
  })

  it('takes a lower percentile as the baseline at once, and never raises it past the percentile', () => {
    fc.assert(
      fc.property(caseArb, ({ s, state, stats }) => {
        fc.pre(stats.samples >= s.minSamples && stats.percentileMs > 1e-3)
        const { baselineMs } = nextControlState(state, stats, s)
        if (state.baselineMs <= 0 || stats.percentileMs < state.baselineMs) {
          expect(baselineMs).toBe(stats.percentileMs)
        } else {
          expect(baselineMs).toBeGreaterThanOrEqual(state.baselineMs)
          expect(baselineMs).toBeLessThanOrEqual(stats.percentileMs)
        }
      }),
    )
  })

  it('matches the reference law: limit × clamp(target / percentile), smoothed, bounded', () => {
    fc.assert(
      fc.property(caseArb, ({ s, state, stats }) => {
        fc.pre(s.targetMs !== undefined && stats.samples >= s.minSamples)
        fc.pre(stats.peakInFlight >= Math.floor(state.limit) && stats.percentileMs > 1e-3)
        const g = Math.min(
          1 + s.maxIncrease,
          Math.max(1 - s.maxDecrease, s.targetMs / stats.percentileMs),
        )
        const raw = state.limit + (state.limit * g - state.limit) * s.smoothing
        const want = Math.min(s.maxLimit, Math.max(s.minLimit, raw))
        expect(nextControlState(state, stats, s).limit).toBeCloseTo(want, 9)
      }),
    )
  })
})
