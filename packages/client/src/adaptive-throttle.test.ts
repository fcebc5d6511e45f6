import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { createAdaptiveThrottle, refusalProbability } from './adaptive-throttle.js'

/**
 * The reference model: every event kept with its time, and counted while its window step is
 * one of the last 60 (the current one included). Slow, and obviously what the docs say.
 */
class ThrottleModel {
  private readonly events: { step: number; kind: 'request' | 'accept' }[] = []

  constructor(
    private readonly k: number,
    private readonly windowMs: number,
  ) {}

  private step(now: number): number {
    return Math.floor(now / (this.windowMs / 60))
  }

  counts(now: number): { requests: number; accepts: number } {
    const current = this.step(now)
    const live = this.events.filter((e) => e.step > current - 60 && e.step <= current)
    return {
      requests: live.filter((e) => e.kind === 'request').length,
      accepts: live.filter((e) => e.kind === 'accept').length,
    }
  }

  probability(now: number): number {
    const { requests, accepts } = this.counts(now)
    return Math.max(0, (requests - this.k * accepts) / (requests + 1))
  }

  request(now: number): void {
    this.events.push({ step: this.step(now), kind: 'request' })
  }

  accept(now: number): void {
    this.events.push({ step: this.step(now), kind: 'accept' })
  }
}

const op = fc.oneof(
  fc.record({
    t: fc.constant('admit' as const),
    r: fc.double({ min: 0, max: 1, maxExcluded: true, noNaN: true }),
  }),
  fc.record({ t: fc.constant('accept' as const) }),
  fc.record({ t: fc.constant('tick' as const), ms: fc.integer({ min: 0, max: 30_000 }) }),
)

describe('refusalProbability', () => {
  it('is 0 while the server accepts at least one request in k', () => {
    expect(refusalProbability(0, 0, 2)).toBe(0)
    expect(refusalProbability(10, 10, 2)).toBe(0)
    expect(refusalProbability(10, 5, 2)).toBe(0)
  })

  it('is (requests - k · accepts) / (requests + 1) beyond that', () => {
    expect(refusalProbability(10, 4, 2)).toBeCloseTo(2 / 11, 12)
    expect(refusalProbability(100, 0, 2)).toBeCloseTo(100 / 101, 12)
  })

  it('never reaches 1, and grows with every refused request', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 1e6 }),
        fc.integer({ min: 0, max: 1e6 }),
        fc.double({ min: 1, max: 10, noNaN: true }),
        (refused, accepts, k) => {
          const requests = refused + accepts
          const p = refusalProbability(requests, accepts, k)
          expect(p).toBeGreaterThanOrEqual(0)
          expect(p).toBeLessThan(1)
          if (requests <= k * accepts) expect(p).toBe(0)
          // One more request that the server does not accept never lowers it.
          expect(refusalProbability(requests + 1, accepts, k)).toBeGreaterThanOrEqual(p)
          // One more accepted request never raises it.
          expect(refusalProbability(requests + 1, accepts + 1, k)).toBeLessThanOrEqual(p + 1e-12)
        },
      ),
    )
  })
})

describe('createAdaptiveThrottle', () => {
  it('decides and counts exactly like the reference model', () => {
    fc.assert(
      fc.property(
        fc.double({ min: 1, max: 4, noNaN: true }),
        fc.constantFrom(1000, 6000, 120_000),
        fc.integer({ min: 0, max: 1e9 }),
        fc.array(op, { maxLength: 300, size: 'max' }),
        (k, windowMs, start, ops) => {
          let now = start
          let nextRandom = 0
          let draws = 0
          const throttle = createAdaptiveThrottle({
            k,
            windowMs,
            clock: () => now,
            random: () => {
              draws++
              return nextRandom
            },
          })
          const model = new ThrottleModel(k, windowMs)
          for (const o of ops) {
            if (o.t === 'tick') now += o.ms
            else if (o.t === 'accept') {
              throttle.accepted()
              model.accept(now)
            } else {
              const p = model.probability(now)
              nextRandom = o.r
              const before = draws
              const admitted = throttle.admit()
              model.request(now)
              expect(admitted).toBe(!(o.r < p))
              // The random source is drawn only when there is something to decide.
              expect(draws - before).toBe(p > 0 ? 1 : 0)
            }
            const c = throttle.counts()
            const m = model.counts(now)
            expect({ requests: c.requests, accepts: c.accepts }).toEqual(m)
            expect(c.refusalProbability).toBeCloseTo(model.probability(now), 12)
          }
        },
      ),
    )
  })

  it('forgets everything one window later', () => {
    let now = 0
    const throttle = createAdaptiveThrottle({ windowMs: 60_000, clock: () => now, random: () => 0 })
    for (let i = 0; i < 100; i++) throttle.admit()
    expect(throttle.counts().refusalProbability).toBeGreaterThan(0.9)
    now += 59_000
    expect(throttle.counts().requests).toBe(100)
    now += 1000
    expect(throttle.counts()).toEqual({ requests: 0, accepts: 0, refusalProbability: 0 })
    expect(throttle.admit()).toBe(true)
  })

  it('forgets step by step: old refusals leave the window before recent ones', () => {
    let now = 0
    const throttle = createAdaptiveThrottle({ windowMs: 60_000, clock: () => now, random: () => 0 })
    for (let i = 0; i < 30; i++) throttle.admit()
    now = 30_000
    for (let i = 0; i < 10; i++) throttle.admit()
    now = 60_000
    expect(throttle.counts().requests).toBe(10)
    now = 90_000
    expect(throttle.counts().requests).toBe(0)
  })

  it('never refuses while every request is accepted', () => {
    let now = 0
    const throttle = createAdaptiveThrottle({ clock: () => now, random: () => 0 })
    for (let i = 0; i < 1000; i++) {
      expect(throttle.admit()).toBe(true)
      throttle.accepted()
      now += 7
    }
  })

  it('treats a clock that goes backwards as standing still', () => {
    let now = 100_000
    const throttle = createAdaptiveThrottle({ windowMs: 60_000, clock: () => now, random: () => 0 })
    throttle.admit()
    now = 0
    throttle.admit()
    expect(throttle.counts().requests).toBe(2)
  })

  it.each([
    [{ k: 0.5 }, RangeError, 'adaptiveThrottle.k: expected a finite number >= 1, got 0.5'],
    [{ k: Number.NaN }, RangeError, 'adaptiveThrottle.k: expected a finite number >= 1, got NaN'],
    [{ k: '2' }, TypeError, 'adaptiveThrottle.k: expected a finite number >= 1, got "2"'],
    [{ windowMs: 0 }, RangeError, 'adaptiveThrottle.windowMs: expected a finite number > 0, got 0'],
    [{ clock: 5 }, TypeError, 'adaptiveThrottle.clock: expected a function, got 5'],
    [{ random: 'x' }, TypeError, 'adaptiveThrottle.random: expected a function, got "x"'],
    [{ K: 2 }, TypeError, 'adaptiveThrottle.K: expected one of k, windowMs, clock, random'],
  ])('refuses bad options: %o', (options, type, message) => {
    expect(() => createAdaptiveThrottle(options as never)).toThrow(type)
    expect(() => createAdaptiveThrottle(options as never)).toThrow(message)
  })
})
