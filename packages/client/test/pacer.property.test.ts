import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { createPacer } from '@floodgate/client'
import { modelGrants } from './pacer-model.js'
import type { ModelCall, ModelPacer } from './pacer-model.js'
import { VirtualTime } from './virtual-time.js'

// createPacer on virtual time against the reference model: for arbitrary sequences of
// acquire and tryAcquire calls, every caller is let through when the model says, in the
// order it asked.

const RATES = [0.5, 1, 3, 10, 40, 1000 / 7]

const pacerSpec: fc.Arbitrary<ModelPacer> = fc.oneof(
  fc.record({
    rate: fc.constantFrom(...RATES),
    burst: fc.option(fc.constantFrom(0, 0.5, 1, 2.5, 5, 20), { nil: undefined }),
  }),
  fc.record({
    rate: fc.constantFrom(...RATES),
    warmup: fc.constantFrom(300, 1000, 2000, 10_000),
  }),
)

const gap = fc.oneof(
  fc.constant(0),
  fc.integer({ min: 1, max: 5000 }),
  fc.double({ min: 0, max: 500, noNaN: true }),
)
// Timeouts end in .3 ms so that a turn never falls exactly on the boundary, where float
// rounding could decide either way.
const timeout = fc.integer({ min: 0, max: 5000 }).map((n) => n + 0.3)

const callSpec = fc.record({
  gapMs: gap,
  cost: fc.constantFrom(0.5, 1, 1, 1, 2, 3, 5),
  timeoutMs: fc.option(timeout, { nil: undefined }),
  abortAfterMs: fc.option(fc.integer({ min: 0, max: 3000 }), { nil: undefined }),
  /**
   * How far the wall clock is stepped back just before the call, in the runs that step it:
   * further than any gap (at most 5 s), so the call's reading is earlier than the last one.
   */
  stepBackMs: fc.option(fc.constantFrom(6_000, 60_000, 3_600_000), { nil: undefined }),
})
type CallSpec = typeof callSpec extends fc.Arbitrary<infer T> ? T : never

const START = fc.constantFrom(0, 1_000_000, 1_764_000_000_000)

function near(actual: number, expected: number): boolean {
  return Math.abs(actual - expected) <= 1e-6 + Math.abs(expected) * 1e-13
}

interface Run {
  readonly calls: ModelCall[]
  /** Grant time, `false` for a refused tryAcquire, `'aborted'` for a rejected one. */
  readonly results: (number | false | 'aborted')[]
  /** Indexes in the order their promises settled as granted. */
  readonly order: number[]
  /** Virtual time at which each aborted call rejected. */
  readonly abortedAt: Map<number, number>
}

async function run(
  spec: ModelPacer,
  start: number,
  specs: readonly CallSpec[],
  withAborts: boolean,
  stepBack = false,
): Promise<Run> {
  const time = new VirtualTime(start)
  // The pacer's clock: virtual time, less the steps back of the wall clock so far. Turns are
  // recorded in virtual time, the time that really passes.
  let steppedBack = 0
  const clock = (): number => time.clock() - steppedBack
  const pacer = createPacer({ ...spec, clock, sleep: time.sleep })
  const calls: ModelCall[] = []
  const results: (number | false | 'aborted')[] = []
  const order: number[] = []
  const abortedAt = new Map<number, number>()
  for (const [i, s] of specs.entries()) {
    await time.advance(s.gapMs)
    if (stepBack) steppedBack += s.stepBackMs ?? 0
    const at = time.clock()
    if (withAborts) {
      calls.push({ kind: 'acquire', at, cost: s.cost })
      const controller = new AbortController()
      if (s.abortAfterMs !== undefined) {
        void time.sleep(s.abortAfterMs).then(() => controller.abort(new Error(`abort ${i}`)))
      }
      pacer.acquire(s.cost, { signal: controller.signal }).then(
        () => {
          results[i] = time.clock()
          order.push(i)
        },
        (error: Error) => {
          expect(error.message).toBe(`abort ${i}`)
          results[i] = 'aborted'
          abortedAt.set(i, time.clock())
        },
      )
    } else if (s.timeoutMs === undefined) {
      calls.push({ kind: 'acquire', at, cost: s.cost })
      void pacer.acquire(s.cost).then((waited) => {
        results[i] = time.clock()
        // Measured on the pacer's clock: a step back during the wait hides the time before it.
        if (stepBack) expect(waited).toBeLessThanOrEqual(time.clock() - at + 1e-6)
        else expect(near(waited, time.clock() - at)).toBe(true)
        order.push(i)
      })
    } else {
      calls.push({ kind: 'try', at, cost: s.cost, timeoutMs: s.timeoutMs })
      void pacer.tryAcquire(s.cost, { timeoutMs: s.timeoutMs }).then((ok) => {
        results[i] = ok ? time.clock() : false
        if (ok) order.push(i)
      })
    }
  }
  await time.advance(1e9)
  expect(time.pending()).toBe(0)
  expect(pacer.waiting).toBe(0)
  return { calls, results, order, abortedAt }
}

describe('createPacer against the reference model', () => {
  it('grants every acquire and tryAcquire when the model does, first come first served', async () => {
    await fc.assert(
      fc.asyncProperty(
        pacerSpec,
        START,
        fc.array(callSpec, { minLength: 1, maxLength: 40, size: 'max' }),
        async (spec, start, specs) => {
          const { calls, results, order } = await run(spec, start, specs, false)
          const expected = modelGrants(spec, start, calls)
          expect(results.length).toBe(calls.length)
          for (const [i, want] of expected.entries()) {
            const got = results[i]
            if (want === false) expect(got, `call ${i}`).toBe(false)
            else
              expect(near(got as number, want), `call ${i}: got ${String(got)}, want ${want}`).toBe(
                true,
              )
          }
          expect(order).toEqual([...order].sort((a, b) => a - b))
        },
      ),
      { numRuns: 150 },
    )
  })

  it('a caller who gives up hands its turn to those behind it, as if it had never asked', async () => {
    await fc.assert(
      fc.asyncProperty(
        pacerSpec,
        START,
        fc.array(callSpec, { minLength: 1, maxLength: 30 }),
        async (spec, start, specs) => {
          const { calls, results, order, abortedAt } = await run(spec, start, specs, true)
          // As if those who gave up had never asked.
          const kept = calls.filter((_, i) => results[i] !== 'aborted')
          const without = modelGrants(spec, start, kept)
          // As if nobody had given up.
          const everyone = modelGrants(spec, start, calls)
          let k = 0
          for (const [i, got] of results.entries()) {
            if (got === 'aborted') {
              // It was refused the moment it gave up, and it gave up before its turn: nobody
              // who asked after it had been let through yet.
              const at = abortedAt.get(i)!
              expect(near(at, calls[i]!.at + specs[i]!.abortAfterMs!)).toBe(true)
              for (const later of results.slice(i + 1)) {
                if (typeof later === 'number') expect(later).toBeGreaterThanOrEqual(at - 1e-6)
              }
              continue
            }
            const want = without[k++] as number
            // Its turn is the one it would have had if those who left had never asked. (They
            // left before their turn, and its new turn is never before theirs, so it has not
            // passed yet.)
            expect(near(got as number, want), `call ${i}: got ${String(got)}, want ${want}`).toBe(
              true,
            )
            // A bursty pacer never makes anyone wait longer because someone left. (A
            // warming-up one may, a little: permits given back leave it colder.)
            if (spec.warmup === undefined) {
              const upper = everyone[i] as number
              expect(got as number).toBeLessThanOrEqual(upper + 1e-6 + Math.abs(upper) * 1e-13)
            }
          }
          expect(order).toEqual([...order].sort((a, b) => a - b))
        },
      ),
      { numRuns: 150 },
    )
  })

  it('a wall clock stepped back, by seconds or by an hour, costs a turn at most the time since the pacer last read it', async () => {
    // Failed before the pacer counted only the time that passes: stepped back an hour, it held
    // every caller for an hour. Between the last reading before a step and the first after it,
    // no clock can tell how much time passed: that much (at most the call's gap) is lost, not
    // the size of the step. Bursty pacers: a warming-up one that loses idle time is warmer.
    const bursty = fc.record({
      rate: fc.constantFrom(...RATES),
      burst: fc.option(fc.constantFrom(0, 0.5, 1, 2.5, 5, 20), { nil: undefined }),
    })
    await fc.assert(
      fc.asyncProperty(
        bursty,
        START,
        // acquire only: a tryAcquire's answer may turn on the time lost.
        fc
          .array(callSpec, { minLength: 1, maxLength: 30 })
          .map((all) => all.map((c) => ({ ...c, timeoutMs: undefined }))),
        async (spec, start, specs) => {
          const { calls, results } = await run(spec, start, specs, false, true)
          const expected = modelGrants(spec, start, calls)
          for (const [i, want] of expected.entries()) {
            const got = results[i]
            if (want === false || got === false) continue
            // The time lost to every step taken before this turn came.
            let lost = 0
            for (const [j, c] of calls.entries()) {
              if (specs[j]!.stepBackMs !== undefined && c.at <= (got as number)) {
                lost += specs[j]!.gapMs
              }
            }
            const slack = 1e-6 + Math.abs(want) * 1e-13
            expect(got as number, `call ${i}`).toBeGreaterThanOrEqual(want - slack)
            expect(got as number, `call ${i}`).toBeLessThanOrEqual(want + lost + slack)
          }
        },
      ),
      { numRuns: 150 },
    )
  })
})
