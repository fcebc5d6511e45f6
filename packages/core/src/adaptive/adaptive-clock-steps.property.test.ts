import { DDSketch } from '@datadog/sketches-js'
import fc from 'fast-check'
import { describe, expect, it, vi } from 'vitest'
import type { AlgorithmResult } from '../algorithms/algorithm.js'
import type { Decision } from '../decision.js'
import { createLimiter } from '../limiter.js'
import type { RuleAdaptive } from '../rules/rule.js'
import type { RuleInput } from '../rules/schema.js'
import { MemoryStore } from '../stores/memory-store.js'
import type { ConsumeEntry, RefundEntry, Store } from '../stores/store.js'
import { nextControlState, type ControlState } from './control-law.js'

// An adaptive rule beside a token bucket (so the store is asked, and can fail, answer garbage
// or answer after the deadline), under random sequences of responses (fast, slow, failed),
// store answers (good, late, invalid, thrown) and steps of the clock (back or forward by a
// second, a minute, an hour, or none), against a model of the gate's windows that feeds the
// control law (`nextControlState`, tested on its own in control-law.test.ts).
//
// The model, in the words of docs/adaptive.md: windows are timed on steady time, which moves by
// the time between two readings of the clock, by none when the clock went back, and by one
// window when it leapt forward by more; a window with fewer than `minSamples` responses is
// carried on (up to 8 times) unless nothing completed in it while the limit was full and the
// clock did not leap; a latency below 0, or of a request started before the clock's last jump,
// is left out; a store's answer is decided at its arrival.
//
// Besides agreeing with the model, the limit keeps adapting (a window closes within 9 windows of
// the clock's own time, whatever steps it took), moves at most one step at a step of the clock,
// and stays within its bounds.

const WINDOW_MS = 1000
const TIMEOUT_MS = 50
const MAX_CARRIED_WINDOWS = 8
// Low enough for the requests held in flight to take the limit up to it.
const MAX_LIMIT = 5
const facts = { method: 'GET', path: '/', ip: '203.0.113.7', headers: {} }

const rule: RuleInput = {
  id: 'a',
  algorithm: 'adaptive',
  adaptive: {
    target: '100ms',
    window: '1s',
    initialLimit: 4,
    minLimit: 1,
    maxLimit: MAX_LIMIT,
    minSamples: 2,
    reserve: 0,
  },
}
// The same settings, compiled, for the model.
const settings: RuleAdaptive = {
  percentile: 99,
  targetMs: 100,
  tolerance: 1.5,
  windowMs: WINDOW_MS,
  minLimit: 1,
  maxLimit: MAX_LIMIT,
  initialLimit: 4,
  smoothing: 0.5,
  maxDecrease: 0.5,
  maxIncrease: 1,
  minSamples: 2,
  reserve: 0,
  gate: undefined,
  priority: 'normal',
}

type Mode = 'sync' | 'late' | 'invalid' | 'throw'
const STEPS = [1000, 60_000, 3_600_000].flatMap((ms) => [ms, -ms])

type Op =
  /** A request checked; admitted, it holds its slot until `finish`. */
  | { readonly kind: 'start'; readonly mode: Mode }
  /** A request checked and answered `latencyMs` later. */
  | { readonly kind: 'answer'; readonly latencyMs: number; readonly failed: boolean }
  | { readonly kind: 'finish'; readonly pick: number; readonly failed: boolean }
  /** A store answer that came after the deadline arrives now. */
  | { readonly kind: 'arrive'; readonly pick: number }
  | { readonly kind: 'advance'; readonly ms: number; readonly look: boolean }
  | { readonly kind: 'step'; readonly ms: number; readonly look: boolean }

const opArb: fc.Arbitrary<Op> = fc.oneof(
  {
    weight: 3,
    arbitrary: fc.record({
      kind: fc.constant('start' as const),
      mode: fc.constantFrom<Mode>('sync', 'sync', 'late', 'invalid', 'throw'),
    }),
  },
  {
    weight: 5,
    arbitrary: fc.record({
      kind: fc.constant('answer' as const),
      latencyMs: fc.constantFrom(5, 20, 60, 250, 900),
      failed: fc.boolean(),
    }),
  },
  {
    weight: 3,
    arbitrary: fc.record({
      kind: fc.constant('finish' as const),
      pick: fc.nat(),
      failed: fc.boolean(),
    }),
  },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('arrive' as const), pick: fc.nat() }) },
  {
    weight: 4,
    arbitrary: fc.record({
      kind: fc.constant('advance' as const),
      ms: fc.constantFrom(10, 100, 400, 1000),
      look: fc.boolean(),
    }),
  },
  {
    weight: 1,
    arbitrary: fc.record({
      kind: fc.constant('step' as const),
      ms: fc.constantFrom(...STEPS),
      look: fc.boolean(),
    }),
  },
)

/** A MemoryStore whose consume calls answer the way they are told. */
class SwitchStore implements Store {
  private readonly memory = new MemoryStore()
  next: Mode = 'sync'
  /** Answers kept back until the test delivers them, after the deadline. */
  readonly waiting: (() => void)[] = []

  consume(entries: readonly ConsumeEntry[], nowMs: number) {
    const mode = this.next
    this.next = 'sync'
    if (mode === 'throw') throw new Error('store down')
    const answer = (this.memory.consume(entries, nowMs) as AlgorithmResult[]).map((r) => ({ ...r }))
    if (mode === 'invalid') return answer.map((r) => ({ ...r, remaining: Number.NaN }))
    if (mode === 'sync') return answer
    return new Promise<readonly AlgorithmResult[]>((resolve) =>
      this.waiting.push(() => resolve(answer)),
    )
  }

  refund(entries: readonly RefundEntry[], nowMs: number) {
    return this.memory.refund(entries, nowMs)
  }
}

/** The gate as docs/adaptive.md describes it. */
class Model {
  control: ControlState = { limit: settings.initialLimit, baselineMs: 0 }
  cap = settings.initialLimit
  windows = 0
  inFlight = 0
  private steady = 0
  private last = Number.NaN
  private jumpedAt = Number.NEGATIVE_INFINITY
  private leapt = false
  private end = Number.NaN
  private samples: number[] = []
  private peak = 0
  private carried = 0

  /** The gate is given the clock's reading `now`. */
  read(now: number): void {
    if (!Number.isNaN(this.last)) {
      const elapsed = now - this.last
      if (elapsed >= 0 && elapsed <= WINDOW_MS) this.steady += elapsed
      else {
        this.jumpedAt = now
        if (elapsed > 0) {
          this.steady += WINDOW_MS
          this.leapt = true
        }
      }
    }
    this.last = now
    if (Number.isNaN(this.end)) {
      this.end = this.steady + WINDOW_MS
      return
    }
    if (this.steady < this.end) return
    const n = this.samples.length
    const stalled = n === 0 && this.inFlight >= this.cap && !this.leapt
    this.leapt = false
    this.end += WINDOW_MS
    if (n < settings.minSamples && !stalled && this.carried < MAX_CARRIED_WINDOWS) {
      this.carried++
      return
    }
    const sketch = new DDSketch({ relativeAccuracy: 0.01 })
    for (const x of this.samples) sketch.accept(x)
    const percentileMs = n > 0 ? sketch.getValueAtQuantile(0.99) : 0
    const overdue = this.carried >= MAX_CARRIED_WINDOWS
    const stats = { samples: n, percentileMs, peakInFlight: this.peak, inFlight: this.inFlight }
    this.control = nextControlState(this.control, { ...stats, overdue }, settings)
    this.cap = Math.max(1, Math.floor(this.control.limit + 1e-9))
    this.windows++
    this.samples = []
    this.peak = this.inFlight
    this.carried = 0
  }

  take(): void {
    this.inFlight++
    if (this.inFlight > this.peak) this.peak = this.inFlight
  }

  /** A response that started at `start` ends at `now`. */
  finish(start: number, now: number): void {
    this.read(now)
    const latency = now - start
    if (latency >= 0 && start >= this.jumpedAt) this.samples.push(latency)
    this.inFlight--
  }
}

interface Held {
  readonly decision: Decision
  readonly start: number
}

interface Late {
  readonly deliver: () => void
  /** Whether the gate admitted the request at the first look (when the store was asked). */
  readonly fitted: boolean
}

const turn = () => new Promise<void>((resolve) => setImmediate(resolve))

describe('adaptive rule under clock steps, against a model of its windows', () => {
  it('property: the limit agrees with the model, keeps adapting after any step, moves one step at a time, and stays in bounds', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] })
    try {
      await fc.assert(
        fc.asyncProperty(fc.array(opArb, { maxLength: 120, size: 'max' }), async (ops) => {
          let now = 1_700_000_000_000
          const store = new SwitchStore()
          const limiter = createLimiter({
            clock: () => now,
            store,
            decisionTimeoutMs: TIMEOUT_MS,
            logger: { debug() {}, info() {}, warn() {}, error() {} },
            rules: [rule, { id: 'tb', algorithm: 'token-bucket', limit: 100_000, window: '1s' }],
          })
          const model = new Model()
          const held: Held[] = []
          const late: Late[] = []
          // The clock's own time since the last window closed, as the gate can see it: the
          // time between two readings with no step between them, at most a window (a pause
          // longer than a window is one window to the gate).
          let sinceClose = 0
          let unseen = 0
          let stepped = false
          let windows = 0
          /** The gate reads the clock (the model is told, and the time it sees is counted). */
          const reading = (): void => {
            if (!stepped) sinceClose += Math.min(unseen, WINDOW_MS)
            unseen = 0
            stepped = false
            model.read(now)
          }
          const elapse = (ms: number): void => {
            now += ms
            unseen += ms
          }

          /** A request checked at `now`, the store answering as `mode` says. */
          const start = async (mode: Mode, where: string): Promise<Held | undefined> => {
            reading()
            const fitted = model.inFlight + 1 <= model.cap
            store.next = mode
            const pending = limiter.check(facts)
            if (mode === 'late') {
              vi.advanceTimersByTime(TIMEOUT_MS)
              const d = await pending
              expect(d.failedOpen, where).toBe(true)
              late.push({ deliver: store.waiting.pop()!, fitted })
              return undefined
            }
            const d = await pending
            expect(d.failedOpen, `${where}: failed open`).toBe(mode !== 'sync')
            if (mode !== 'sync') return undefined
            expect(d.allowed, `${where}: admitted`).toBe(fitted)
            if (!fitted) return undefined
            model.take()
            const h = { decision: d, start: now }
            held.push(h)
            return h
          }

          const finish = (h: Held, failed: boolean): void => {
            held.splice(held.indexOf(h), 1)
            reading()
            model.finish(h.start, now)
            limiter.release(h.decision, failed ? 'failed' : 'succeeded')
          }

          for (const [i, op] of ops.entries()) {
            const where = `op ${i} ${JSON.stringify(op)}`
            let look = true
            if (op.kind === 'start') {
              await start(op.mode, where)
            } else if (op.kind === 'answer') {
              const h = await start('sync', where)
              elapse(op.latencyMs)
              if (h) finish(h, op.failed)
            } else if (op.kind === 'finish') {
              if (held.length === 0) continue
              finish(held[op.pick % held.length]!, op.failed)
            } else if (op.kind === 'arrive') {
              if (late.length === 0) continue
              const l = late.splice(op.pick % late.length, 1)[0]!
              // Decided now, if the gate admitted it at the first look: its slot taken if it
              // fits now, then given back (the request was passed unjudged long ago); the peak
              // of the window under way may rise.
              if (l.fitted) {
                reading()
                if (model.inFlight + 1 <= model.cap) {
                  model.take()
                  model.inFlight--
                }
              }
              l.deliver()
              await turn()
            } else if (op.kind === 'advance') {
              elapse(op.ms)
              look = op.look
            } else {
              now += op.ms
              stepped = true
              look = op.look
            }
            if (!look) continue
            const before = { windows: model.windows, limit: model.cap }
            const state = limiter.adaptive('a')!
            reading()
            expect(state.inFlight, `${where}: in flight`).toBe(model.inFlight)
            expect(state.windows, `${where}: windows closed`).toBe(model.windows)
            expect(state.limit, `${where}: the limit`).toBe(model.cap)
            // Whatever the model says:
            expect(state.limit, where).toBeGreaterThanOrEqual(1)
            expect(state.limit, where).toBeLessThanOrEqual(MAX_LIMIT)
            if (op.kind === 'step') {
              // One reading closes at most one window: one step of the limit.
              expect(state.windows - before.windows, where).toBeLessThanOrEqual(1)
              expect(state.limit, where).toBeGreaterThanOrEqual(Math.floor(before.limit / 2))
              expect(state.limit, where).toBeLessThanOrEqual(before.limit * 2)
            }
            if (state.windows > windows) {
              windows = state.windows
              sinceClose = 0
            }
            // Carried at most 8 times, a window closes within 9 of the time the gate saw pass
            // (plus the last gap, which may have run past the end of the one it closes).
            expect(sinceClose, `${where}: time without a window closing`).toBeLessThan(
              (MAX_CARRIED_WINDOWS + 2) * WINDOW_MS,
            )
          }
          for (const l of late) l.deliver()
          await turn()
          for (const h of held) limiter.release(h.decision)
          expect(limiter.adaptive('a')!.inFlight).toBe(0)
          await limiter.close()
        }),
        { numRuns: 300 },
      )
    } finally {
      vi.useRealTimers()
    }
  })
})
