import fc from 'fast-check'
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest'
import type { AlgorithmResult } from './algorithms/algorithm.js'
import { DeadlineWatchdog, withinDeadline, type DeadlineHandlers } from './limiter-deadline.js'

const T = 10
const ANSWER: readonly AlgorithmResult[] = [
  { allowed: true, waitMs: 0, limit: 2, remaining: 1, resetMs: 0, retryAfterMs: 0 },
]

type Outcome = { kind: 'answered' | 'rejected' | 'expired'; atMs: number }

/** One call to a store that answers (or rejects) after `afterMs`, or never when undefined. */
interface Call {
  startGapMs: number
  afterMs: number | undefined
  rejects: boolean
}

function handlers(now: () => number, lates: number[], index: number): DeadlineHandlers<Outcome> {
  return {
    answered: () => ({ kind: 'answered', atMs: now() }),
    failed: (err) => ({
      kind: (err as { code?: string }).code === 'FG_ERR_STORE_TIMEOUT' ? 'expired' : 'rejected',
      atMs: now(),
    }),
    late: () => lates.push(index),
  }
}

describe('DeadlineWatchdog', () => {
  beforeEach(() => {
    vi.useFakeTimers({
      toFake: ['setTimeout', 'clearTimeout', 'setInterval', 'clearInterval', 'Date'],
    })
  })
  afterEach(() => {
    vi.useRealTimers()
  })

  it('settles every watched call once: an answer within twice the deadline wins, a call left unanswered fails within three times it, a later answer is reported late, and no timer outlives the calls', async () => {
    const call = fc.record({
      startGapMs: fc.integer({ min: 0, max: 2 * T }),
      afterMs: fc.option(fc.integer({ min: 0, max: 5 * T }), { nil: undefined }),
      rejects: fc.boolean(),
    })
    await fc.assert(
      fc.asyncProperty(fc.array(call, { minLength: 1, maxLength: 12 }), async (calls: Call[]) => {
        const watchdog = new DeadlineWatchdog(T)
        const base = Date.now()
        const now = (): number => Date.now() - base
        const lates: number[] = []
        const started: number[] = []
        const outcomes: (Outcome | undefined)[] = []
        for (let i = 0; i < calls.length; i++) {
          const c = calls[i]!
          await vi.advanceTimersByTimeAsync(c.startGapMs)
          started.push(now())
          const pending = new Promise<readonly AlgorithmResult[]>((resolve, reject) => {
            if (c.afterMs === undefined) return
            setTimeout(
              () => (c.rejects ? reject(new Error('store failed')) : resolve(ANSWER)),
              c.afterMs,
            )
          })
          void withinDeadline(pending, T, watchdog, handlers(now, lates, i)).then((o) => {
            expect(outcomes[i]).toBeUndefined()
            outcomes[i] = o
          })
        }
        for (let ms = 0; ms < 6 * T; ms++) await vi.advanceTimersByTimeAsync(1)
        for (let i = 0; i < calls.length; i++) {
          const { afterMs, rejects } = calls[i]!
          const o = outcomes[i]
          expect(o, `call ${i}`).toBeDefined()
          const age = o!.atMs - started[i]!
          if (afterMs !== undefined && afterMs < 2 * T) {
            expect(o).toEqual({
              kind: rejects ? 'rejected' : 'answered',
              atMs: started[i]! + afterMs,
            })
          } else if (o!.kind === 'expired') {
            expect(age).toBeGreaterThanOrEqual(2 * T)
            expect(age).toBeLessThanOrEqual(3 * T)
            // An answer after the call expired is reported late (a rejection is dropped).
            const late = afterMs !== undefined && !rejects
            expect(lates.includes(i)).toBe(late)
          } else {
            expect(afterMs).toBeDefined()
            expect(age).toBe(afterMs)
            expect(afterMs!).toBeLessThanOrEqual(3 * T)
          }
        }
        expect(new Set(lates).size).toBe(lates.length)
        expect(vi.getTimerCount()).toBe(0)
      }),
      { numRuns: 150 },
    )
  })

  it('stops its sweep timer when nothing is watched and starts it again for the next call', async () => {
    const watchdog = new DeadlineWatchdog(T)
    const lates: number[] = []
    const first = withinDeadline(
      Promise.resolve(ANSWER),
      T,
      watchdog,
      handlers(() => 0, lates, 0),
    )
    expect(vi.getTimerCount()).toBe(1)
    await expect(first).resolves.toMatchObject({ kind: 'answered' })
    await vi.advanceTimersByTimeAsync(T)
    expect(vi.getTimerCount()).toBe(0)
    const never = withinDeadline(
      new Promise(() => {}),
      T,
      watchdog,
      handlers(() => 0, lates, 1),
    )
    expect(vi.getTimerCount()).toBe(1)
    await vi.advanceTimersByTimeAsync(3 * T)
    await expect(never).resolves.toMatchObject({ kind: 'expired' })
    expect(vi.getTimerCount()).toBe(0)
  })
})
