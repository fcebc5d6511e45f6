import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import {
  ExactBucket,
  exactBases,
  exactParams,
  exactSteps,
  stepCost,
} from '../testing/exact-bucket-model.js'
import { referenceModel } from '../testing/reference-models.js'
import { STATE_TIME_HORIZON_MS, type Algorithm, type AlgorithmParams } from './algorithm.js'
import { runner, saneResult } from './harness.test-util.js'
import { algorithms } from './registry.js'

// FG_PROPERTY_RUNS raises the run count for a soak (the default keeps the suite around a second).
const NUM_RUNS = Number(process.env.FG_PROPERTY_RUNS ?? 250)

const all = Object.values(algorithms)
const usesBurst = (a: Algorithm): boolean =>
  a.name === 'token-bucket' || a.name === 'gcra' || a.name === 'leaky-bucket'

/** Params: small limits so that limits are hit often; a burst only where it means something. */
function paramsFor(a: Algorithm): fc.Arbitrary<AlgorithmParams> {
  return fc
    .record({
      limit: fc.integer({ min: 1, max: 12 }),
      windowMs: fc.oneof(fc.integer({ min: 1, max: 3000 }), fc.constantFrom(100, 1000, 60_000)),
      extra: fc.integer({ min: -3, max: 6 }),
    })
    .map(({ limit, windowMs, extra }) => ({
      limit,
      windowMs,
      burst: usesBurst(a) ? Math.max(1, limit + extra) : limit,
    }))
}

interface Op {
  readonly dt: number
  readonly cost: number
  readonly maxWaitMs: number
  readonly refund: boolean
}

/** Random operations; `dt` is a fraction of the window so that refills and boundaries matter. */
function opsFor(p: AlgorithmParams, { refunds = true, waits = true, backwards = false } = {}) {
  const w = p.windowMs
  const cap = Math.max(p.limit, p.burst)
  return fc.array(
    fc.record({
      dt: fc.oneof(
        fc.constant(0),
        fc.integer({ min: backwards ? -w : 0, max: Math.max(1, Math.ceil(w / 10)) }),
        fc.integer({ min: backwards ? -2 * w : 0, max: 2 * w }),
      ),
      cost: fc.oneof(
        fc.integer({ min: 1, max: Math.min(3, cap) }),
        fc.integer({ min: 1, max: cap + 1 }),
      ),
      maxWaitMs: waits
        ? fc.oneof(fc.constant(0), fc.integer({ min: 1, max: 2 * w }))
        : fc.constant(0),
      refund: refunds
        ? fc.boolean().chain((b) => (b ? fc.boolean() : fc.constant(false)))
        : fc.constant(false),
    }),
    { minLength: 1, maxLength: 40, size: 'max' },
  )
}

const bases = fc.constantFrom(0, 1_234, 1_763_776_543_210)

describe.each(all.map((a) => [a.name, a] as const))('%s', (_name, algorithm) => {
  it('matches its brute-force reference model exactly (dry runs mutate nothing, refusals change nothing)', () => {
    fc.assert(
      fc.property(
        paramsFor(algorithm).chain((p) => fc.tuple(fc.constant(p), opsFor(p), bases)),
        ([p, ops, base]) => {
          const run = runner(algorithm, p)
          const ref = referenceModel(algorithm.name).create(p)
          let now = base
          for (const [i, op] of ops.entries()) {
            now += op.dt
            const at = `op ${i} at ${now - base}`
            if (op.refund) {
              run.refund(op.cost, now)
              ref.refund(op.cost, now)
              continue
            }
            const before = run.snapshot()
            const dry = run.consume(op.cost, now, op.maxWaitMs, false)
            expect(run.snapshot(), `${at}: a dry run mutated the state`).toEqual(before)
            const got = run.consume(op.cost, now, op.maxWaitMs, true)
            expect(dry, `${at}: dry run and commit disagree`).toEqual(got)
            expect(saneResult(got), at).toBeUndefined()
            if (!got.allowed)
              expect(run.snapshot(), `${at}: a refusal changed the state`).toEqual(before)
            const want = ref.consume(op.cost, now, op.maxWaitMs)
            const compared = { ...got }
            // The reference answers Infinity for a request that can never pass (cost above capacity).
            if (!Number.isFinite(want.retryAfterMs)) compared.retryAfterMs = want.retryAfterMs
            expect(compared, at).toEqual(want)
          }
        },
      ),
      { numRuns: NUM_RUNS },
    )
  })

  it('is safe when the clock goes backwards: finite, whole, non-negative results', () => {
    fc.assert(
      fc.property(
        paramsFor(algorithm).chain((p) => fc.tuple(fc.constant(p), opsFor(p, { backwards: true }))),
        ([p, ops]) => {
          const run = runner(algorithm, p)
          let now = 10 * p.windowMs
          for (const op of ops) {
            now = Math.max(0, now + op.dt)
            if (op.refund) run.refund(op.cost, now)
            else expect(saneResult(run.consume(op.cost, now, op.maxWaitMs))).toBeUndefined()
            for (const v of run.snapshot()) expect(Number.isFinite(v) && v >= 0).toBe(true)
            expect(Number.isNaN(run.idleAtMs(now))).toBe(false)
          }
        },
      ),
      { numRuns: NUM_RUNS },
    )
  })

  it('is indistinguishable from a fresh state once idleAtMs has passed', () => {
    fc.assert(
      fc.property(
        paramsFor(algorithm).chain((p) =>
          fc.tuple(fc.constant(p), opsFor(p, { refunds: algorithm.name === 'concurrency' })),
        ),
        bases,
        ([p, ops], base) => {
          const run = runner(algorithm, p)
          let now = base
          for (const op of ops) {
            now += op.dt
            if (op.refund) run.refund(op.cost, now)
            else run.consume(op.cost, now, op.maxWaitMs)
          }
          const idle = run.idleAtMs(now)
          if (!Number.isFinite(idle)) {
            // Only a concurrency key with slots held never idles by itself.
            expect(algorithm.name).toBe('concurrency')
            return
          }
          const later = Math.max(now, Math.ceil(idle))
          const fresh = runner(algorithm, p)
          for (let cost = 1; cost <= Math.max(p.limit, p.burst); cost++) {
            expect(run.consume(cost, later, 0, false)).toEqual(fresh.consume(cost, later, 0, false))
          }
        },
      ),
      { numRuns: NUM_RUNS },
    )
  })

  it('all-zero state is fresh, even at nowMs = 0', () => {
    for (const nowMs of [0, 1, 999, 1_763_776_543_210]) {
      const p = { limit: 5, windowMs: 1000, burst: 5 }
      const r = runner(algorithm, p).consume(5, nowMs)
      expect(r).toMatchObject({ allowed: true, remaining: 0, waitMs: 0, retryAfterMs: 0 })
      expect(runner(algorithm, p).consume(2, nowMs).remaining).toBe(3)
    }
  })
})

/** Sum of costs of `events` with time in the half-open or closed range. */
const sum = (
  events: readonly (readonly [number, number])[],
  test: (t: number) => boolean,
): number => events.reduce((s, [t, c]) => (test(t) ? s + c : s), 0)

describe('never admits more than the limit allows', () => {
  /** Admitted (time, cost) pairs for a run without refunds, reservations or backwards time. */
  function admitted(
    algorithm: Algorithm,
    p: AlgorithmParams,
    ops: readonly Op[],
  ): [number, number][] {
    const run = runner(algorithm, p)
    const events: [number, number][] = []
    let now = 0
    for (const op of ops) {
      now += op.dt
      if (run.consume(op.cost, now).allowed) events.push([now, op.cost])
    }
    return events
  }
  const noExtras = { refunds: false, waits: false }

  it.each(['token-bucket', 'gcra', 'leaky-bucket'] as const)(
    '%s: at most burst + elapsed × rate in any interval',
    (name) => {
      const algorithm = algorithms[name]
      fc.assert(
        fc.property(
          paramsFor(algorithm).chain((p) => fc.tuple(fc.constant(p), opsFor(p, noExtras))),
          ([p, ops]) => {
            const events = admitted(algorithm, p, ops)
            for (const [a] of events) {
              for (const [b] of events) {
                if (b < a) continue
                const total = sum(events, (t) => t >= a && t <= b)
                expect(total).toBeLessThanOrEqual(p.burst + ((b - a) * p.limit) / p.windowMs + 1e-6)
              }
            }
          },
        ),
        { numRuns: NUM_RUNS },
      )
    },
  )

  it('fixed-window: at most limit per aligned window, 2 × limit in any window', () => {
    const algorithm = algorithms['fixed-window']
    fc.assert(
      fc.property(
        paramsFor(algorithm).chain((p) => fc.tuple(fc.constant(p), opsFor(p, noExtras))),
        ([p, ops]) => {
          const events = admitted(algorithm, p, ops)
          for (const [a] of events) {
            const start = Math.floor(a / p.windowMs) * p.windowMs
            expect(sum(events, (t) => t >= start && t < start + p.windowMs)).toBeLessThanOrEqual(
              p.limit,
            )
            expect(sum(events, (t) => t >= a && t < a + p.windowMs)).toBeLessThanOrEqual(
              2 * p.limit,
            )
          }
        },
      ),
      { numRuns: NUM_RUNS },
    )
  })

  it('sliding-window-log: at most limit in any window (t - windowMs, t]', () => {
    const algorithm = algorithms['sliding-window-log']
    fc.assert(
      fc.property(
        paramsFor(algorithm).chain((p) => fc.tuple(fc.constant(p), opsFor(p, noExtras))),
        ([p, ops]) => {
          const events = admitted(algorithm, p, ops)
          for (const [x] of events) {
            expect(sum(events, (t) => t > x - p.windowMs && t <= x)).toBeLessThanOrEqual(p.limit)
          }
        },
      ),
      { numRuns: NUM_RUNS },
    )
  })

  it('sliding-window-counter: at most limit per aligned window', () => {
    const algorithm = algorithms['sliding-window-counter']
    fc.assert(
      fc.property(
        paramsFor(algorithm).chain((p) => fc.tuple(fc.constant(p), opsFor(p, noExtras))),
        ([p, ops]) => {
          const events = admitted(algorithm, p, ops)
          for (const [a] of events) {
            const start = Math.floor(a / p.windowMs) * p.windowMs
            expect(sum(events, (t) => t >= start && t < start + p.windowMs)).toBeLessThanOrEqual(
              p.limit,
            )
          }
        },
      ),
      { numRuns: NUM_RUNS },
    )
  })

  it('concurrency: never more than limit in flight', () => {
    const algorithm = algorithms.concurrency
    fc.assert(
      fc.property(
        paramsFor(algorithm).chain((p) => fc.tuple(fc.constant(p), opsFor(p))),
        ([p, ops]) => {
          const run = runner(algorithm, p)
          let held = 0
          for (const op of ops) {
            if (op.refund) {
              const back = Math.min(held, op.cost)
              run.refund(back, 0)
              held -= back
            } else if (run.consume(op.cost, 0).allowed) {
              held += op.cost
            }
            expect(held).toBeLessThanOrEqual(p.limit)
          }
        },
      ),
      { numRuns: NUM_RUNS },
    )
  })
})

describe('gcra and token-bucket', () => {
  it('admit exactly the same requests, reservations included', () => {
    fc.assert(
      fc.property(
        paramsFor(algorithms.gcra).chain((p) => fc.tuple(fc.constant(p), opsFor(p))),
        bases,
        ([p, ops], base) => {
          const tb = runner(algorithms['token-bucket'], p)
          const g = runner(algorithms.gcra, p)
          let now = base
          for (const op of ops) {
            now += op.dt
            if (op.refund) {
              tb.refund(op.cost, now)
              g.refund(op.cost, now)
            } else {
              expect(g.consume(op.cost, now, op.maxWaitMs)).toEqual(
                tb.consume(op.cost, now, op.maxWaitMs),
              )
            }
          }
        },
      ),
      { numRuns: NUM_RUNS },
    )
  })
})

describe('remaining is what the next request can take', () => {
  const capacity = (a: Algorithm, p: AlgorithmParams): number => (usesBurst(a) ? p.burst : p.limit)
  // Large limits and fractional costs too: there the float noise of a sum is larger than
  // EPSILON, and `remaining` must still come from the admission test itself.
  const bigParams = (a: Algorithm): fc.Arbitrary<AlgorithmParams> =>
    fc
      .record({
        limit: fc.oneof(fc.integer({ min: 1, max: 12 }), fc.integer({ min: 1, max: 1e9 })),
        windowMs: fc.oneof(
          fc.integer({ min: 1, max: 3000 }),
          fc.integer({ min: 1, max: 2 ** 31 - 1 }),
        ),
        extra: fc.double({ min: 0.01, max: 3, noNaN: true }),
      })
      .map(({ limit, windowMs, extra }) => ({
        limit,
        windowMs,
        burst: usesBurst(a) ? Math.max(1, Math.round(limit * extra)) : limit,
      }))
  const fraction = fc.oneof(
    fc.constantFrom(0, 1e-9, 0.1, 0.3, 1 / 3, 0.5, 1),
    fc.double({ min: 0, max: 1.1, noNaN: true }),
  )

  it.each(all.filter((a) => a.name !== 'sliding-window-log').map((a) => [a.name, a] as const))(
    '%s: a request of remaining units passes and one of remaining + 1 does not',
    (_name, algorithm) => {
      fc.assert(
        fc.property(
          bigParams(algorithm),
          fc.array(fc.record({ dt: fc.integer({ min: 0, max: 5000 }), f: fraction }), {
            minLength: 1,
            maxLength: 12,
          }),
          bases,
          (p, ops, base) => {
            const run = runner(algorithm, p)
            let now = base
            for (const op of ops) {
              now += op.dt
              const { remaining } = run.consume(op.f * capacity(algorithm, p), now)
              if (remaining > 0) expect(run.consume(remaining, now, 0, false).allowed).toBe(true)
              expect(run.consume(remaining + 1, now, 0, false).allowed).toBe(false)
            }
          },
        ),
        { numRuns: NUM_RUNS * 4 },
      )
    },
  )

  it('fixed-window: 0.1, 0.3 and 0.1 of a large limit leave what a request can take', () => {
    const p = { limit: 231_482_364, windowMs: 1, burst: 231_482_364 }
    const run = runner(algorithms['fixed-window'], p)
    for (const f of [0.1, 0.3, 0.1]) run.consume(f * p.limit, 0)
    const { remaining } = run.consume(0, 0, 0, false)
    expect(run.consume(remaining + 1, 0, 0, false).allowed).toBe(false)
  })
})

describe('a clock that steps back stands still within the horizon, and forgets past it', () => {
  // The time the state last saw is the latest time it was written at (an admitted request or
  // a refund); a clock reading earlier than that must answer as if it read that time, until a
  // write leaves the state all zeros (fresh, and dated no later than now): its time is then
  // forgotten, as RedisStore deletes such a key, and the clock starts afresh. A reading earlier
  // than the state's date by more than STATE_TIME_HORIZON_MS finds the state forgotten: it
  // answers as a fresh state would, and its first write replaces the old state. The
  // sliding window counter weighs its previous window more instead (documented), and the
  // sliding log keeps no time for a refund, so they are left out. Without queueing: whether a
  // wait fits in maxWaitMs depends on when the clock reads.
  const standing = ['token-bucket', 'gcra', 'fixed-window', 'leaky-bucket', 'concurrency'] as const

  it.each(standing)(
    '%s answers at an earlier time as at the latest time it was written at, or as fresh past the horizon',
    (name) => {
      const algorithm = algorithms[name]
      // The date the state carries: its window's start for the fixed window; none for slots.
      const datedAt = (t: number, p: AlgorithmParams): number =>
        name === 'concurrency'
          ? Number.NEGATIVE_INFINITY
          : name === 'fixed-window'
            ? Math.floor(t / p.windowMs) * p.windowMs
            : t
      fc.assert(
        fc.property(
          paramsFor(algorithm).chain((p) =>
            fc.tuple(fc.constant(p), opsFor(p, { backwards: true, waits: false })),
          ),
          bases,
          ([p, ops], base) => {
            const raw = runner(algorithm, p)
            let still = runner(algorithm, p)
            let now = base + 10 * p.windowMs
            let written = Number.NEGATIVE_INFINITY
            for (const [i, op] of ops.entries()) {
              now = Math.max(0, now + op.dt)
              const lost = datedAt(written, p) - now > STATE_TIME_HORIZON_MS
              const model = lost ? runner(algorithm, p) : still
              const at = lost ? now : Math.max(now, written)
              const forgotten = (): boolean => raw.snapshot().every((v) => v === 0)
              if (op.refund) {
                raw.refund(op.cost, now)
                model.refund(op.cost, at)
                still = model
                written = forgotten() ? Number.NEGATIVE_INFINITY : at
                continue
              }
              const got = raw.consume(op.cost, now, op.maxWaitMs)
              const want = model.consume(op.cost, at, op.maxWaitMs)
              // What is admitted and what is left; a wait or reset the fixed window counts to
              // its window's end is measured from the clock's reading, so it may be longer.
              const pick = (r: typeof got) => ({ allowed: r.allowed, remaining: r.remaining })
              expect(
                pick(got),
                `op ${i} at ${now - base} (${lost ? 'forgotten' : `standing at ${at - base}`})`,
              ).toEqual(pick(want))
              if (got.allowed && (op.cost > 0 || lost)) {
                still = model
                written = forgotten() ? Number.NEGATIVE_INFINITY : at
              }
            }
          },
        ),
        { numRuns: NUM_RUNS },
      )
    },
  )

  it('fixed-window: units taken while the clock stood back still count when it comes back', () => {
    const p = { limit: 10, windowMs: 1000, burst: 10 }
    const run = runner(algorithms['fixed-window'], p)
    expect(run.consume(10, 5500).allowed).toBe(true)
    run.refund(9, 5600) // e.g. requests that are not counted by their outcome
    // The clock steps back by 0.9 s: the state stands still in the window of 5 s.
    expect(run.consume(9, 4700).allowed).toBe(true)
    // Back at 5.7 s, in the same window as those 10 units: nothing is left.
    expect(run.consume(1, 5700)).toMatchObject({ allowed: false, remaining: 0 })
  })

  it.each([
    'token-bucket',
    'gcra',
    'leaky-bucket',
    'fixed-window',
    'sliding-window-counter',
  ] as const)(
    '%s: a write that leaves the state fresh forgets its time (RedisStore deletes the key)',
    (name) => {
      const p = { limit: 10, windowMs: 1000, burst: 10 }
      const run = runner(algorithms[name], p)
      expect(run.consume(10, 5500).allowed).toBe(true)
      run.refund(10, 5600)
      expect(run.snapshot().every((v) => v === 0)).toBe(true)
    },
  )
})

describe('whole units at large bursts', () => {
  // A burst of 2^24 and more, whole costs, and a refill of whole units per millisecond: every
  // exact balance is a whole number a double holds exactly, so the token bucket's and GCRA's
  // answers must be those of integer arithmetic. GCRA decided in milliseconds, where EPSILON
  // is below the float spacing of `burst × T`: it refused a request costing what was left.
  const params = fc
    .record({
      burst: fc
        .integer({ min: 24, max: 40 })
        .chain((bits) =>
          fc.integer({ min: 1, max: 2 ** 20 }).map((f) => Math.floor(2 ** bits * (f / 2 ** 20))),
        ),
      perMs: fc.oneof(fc.integer({ min: 1, max: 1000 }), fc.integer({ min: 1, max: 2 ** 30 })),
      windowMs: fc.constantFrom(1, 7, 1000, 60_000),
    })
    .filter(({ burst }) => burst >= 2 ** 24)
    .map(({ burst, perMs, windowMs }) => ({ limit: perMs * windowMs, windowMs, burst }))

  it.each(['token-bucket', 'gcra'] as const)(
    '%s: admits what integer arithmetic admits, and a request of exactly what is left passes',
    (name) => {
      fc.assert(
        fc.property(
          params,
          fc.array(
            fc.record({
              dt: fc.oneof(fc.constant(0), fc.integer({ min: 0, max: 3 })),
              share: fc.double({ min: 0, max: 1, noNaN: true }),
            }),
            { minLength: 1, maxLength: 8 },
          ),
          bases,
          (p, ops, base) => {
            const run = runner(algorithms[name], p)
            const perMs = p.limit / p.windowMs
            let used = 0
            let now = base
            for (const op of ops) {
              now += op.dt
              used = Math.max(0, used - op.dt * perMs)
              const left = p.burst - used
              const cost = Math.floor(op.share * p.burst)
              // What is left must pass (a dry run), and its remaining must say so.
              expect(run.consume(left, now, 0, false).allowed).toBe(left >= 0)
              const r = run.consume(cost, now)
              expect(r.allowed).toBe(cost <= left)
              if (r.allowed) used += cost
              expect(r.remaining).toBe(p.burst - used)
            }
          },
        ),
        { numRuns: NUM_RUNS * 2 },
      )
    },
  )
})

describe('exact at every size within the documented range', () => {
  // Two-sided against integer arithmetic (BigInt): never admits what the exact bucket refuses,
  // never refuses what it admits, and every time and count it answers is the exact one, for
  // any window up to the longest, any limit up to 2^53 and any burst with
  // burst × windowMs / gcd(limit, windowMs) up to 2^50. The balance is fractional whenever the
  // refill is not a whole number of units per millisecond; stored as a double of units with
  // an EPSILON of 1e-9 it drifted past 2^24, and a token bucket of 508,271,373 per 7 ms with a
  // burst of 2e10 refused a cost of exactly what was left.
  it('token bucket: the reported case', () => {
    const p = { limit: 508_271_373, windowMs: 7, burst: 20_000_000_000 }
    const run = runner(algorithms['token-bucket'], p)
    const model = new ExactBucket('token-bucket', p)
    const base = 1_763_776_543_210
    for (const [dt, cost] of [
      [0, 17_461_401_615],
      [4, 230_927_445],
    ] as const) {
      expect(run.consume(cost, base + dt).allowed).toBe(model.consume(cost, base + dt).allowed)
    }
    const left = model.left(base + 7)
    expect(left).toBe(2_815_942_313)
    expect(run.consume(left, base + 7)).toMatchObject(model.consume(left, base + 7))
  })

  it.each(['token-bucket', 'gcra', 'leaky-bucket'] as const)(
    '%s: answers what the exact bucket answers, and is never idle before it',
    (name) => {
      fc.assert(
        fc.property(
          exactParams.chain(({ p, maxWaitMs }) =>
            fc.tuple(fc.constant(p), exactSteps(p, maxWaitMs), exactBases),
          ),
          ([p, steps, base]) => {
            const run = runner(algorithms[name], p)
            const model = new ExactBucket(name, p)
            let now = base
            for (const step of steps) {
              now += step.dtMs
              const cost = stepCost(step, model, p, now)
              const want = model.consume(cost, now, step.maxWaitMs)
              const got = run.consume(cost, now, step.maxWaitMs)
              expect({ ...got, limit: undefined }, `cost ${cost} at ${now}`).toEqual({
                ...want,
                limit: undefined,
              })
              expect(Math.ceil(run.idleAtMs(now))).toBeGreaterThanOrEqual(model.idleAtMs())
            }
          },
        ),
        { numRuns: NUM_RUNS * 4 },
      )
    },
  )
})
