import {
  checkFunction,
  checkKnownKeys,
  checkNumberAbove,
  checkObject,
  checkSignal,
} from './option-checks.js'
import {
  burstyShape,
  earliestGrant,
  initialState,
  reserve,
  warmingUpShape,
} from './pacer-schedule.js'
import type { ScheduleState } from './pacer-schedule.js'
import { sleep as defaultSleep } from './sleep.js'
import type { Sleep } from './sleep.js'

/** Options of {@link createPacer}. */
export interface PacerOptions {
  /** Permits per second at the steady rate. */
  readonly rate: number
  /**
   * The most permits stored while idle, spent at once when callers come back (SmoothBursty).
   * `0` paces strictly. Not with `warmup`, whose period decides what is stored.
   * @default rate (one second's worth)
   */
  readonly burst?: number | undefined
  /**
   * A warm-up period in milliseconds (SmoothWarmingUp): after idleness the pacer starts at a
   * third of `rate` and speeds up linearly to `rate` over this period. A new pacer starts
   * cold; one left idle for `warmup` milliseconds is cold again.
   */
  readonly warmup?: number | undefined
  /**
   * Current time in milliseconds.
   * @default Date.now
   */
  readonly clock?: (() => number) | undefined
  /**
   * Waits until the next turn; must settle soon after its signal aborts, as the pacer aborts
   * a wait when an earlier caller gives up its turn. Inject one in tests.
   * @default a cancellable `setTimeout`
   */
  readonly sleep?: Sleep | undefined
}

/** Options of {@link Pacer.acquire}. */
export interface AcquireOptions {
  /** Gives up the turn: the promise rejects with the signal's reason. */
  readonly signal?: AbortSignal | undefined
}

/** Options of {@link Pacer.tryAcquire}. */
export interface TryAcquireOptions extends AcquireOptions {
  /**
   * The longest wait accepted, in milliseconds; `Infinity` waits as long as it takes.
   * @default 0 (only a turn that is free now)
   */
  readonly timeoutMs?: number | undefined
}

/** Paces callers to a rate: each waits its turn, in the order they asked. */
export interface Pacer {
  /**
   * Waits for a turn. Turns are handed out in the order of the calls; the cost of a call
   * delays the caller after it, so after idleness even a large `cost` goes at once.
   *
   * @param cost - permits this call takes (any positive number)
   * @param options - an `AbortSignal` that gives up the turn
   * @returns a promise of the milliseconds waited, rejected with the signal's reason when
   *   aborted or with a `RangeError` for a bad cost
   */
  acquire(cost?: number, options?: AcquireOptions): Promise<number>
  /**
   * Takes a turn if one comes within `timeoutMs`, and waits for it; resolves `false` at once,
   * taking nothing, when the turn would come later.
   *
   * @param cost - permits this call takes (any positive number)
   * @param options - `timeoutMs` and an `AbortSignal`
   * @returns a promise of `true` once the turn comes, or `false` when it would not come in time
   */
  tryAcquire(cost?: number, options?: TryAcquireOptions): Promise<boolean>
  /** Permits per second at the steady rate. */
  readonly rate: number
  /** Callers waiting for their turn now. */
  readonly waiting: number
}

interface Waiter {
  readonly calledAt: number
  readonly cost: number
  /** The schedule before this waiter's reservation, to replay from if an earlier one leaves. */
  before: ScheduleState
  grantAt: number
  readonly resolve: (waitedMs: number) => void
  readonly reject: (reason: unknown) => void
  readonly signal: AbortSignal | undefined
  readonly onAbort: () => void
}

const KNOWN = ['rate', 'burst', 'warmup', 'clock', 'sleep']

/**
 * The clock as the pacer reads it: only the time that passes counts. A reading earlier than the
 * last one (a wall clock stepped back: an NTP step, a VM restored) counts as no time passing,
 * and time counts on from there; standing still at the last reading instead would hold every
 * caller for as long as the step.
 */
function elapsedTime(clock: () => number): () => number {
  let last: number | undefined
  let elapsed = 0
  return () => {
    const now = clock()
    if (last === undefined) elapsed = now
    else if (now > last) elapsed += now - last
    last = now
    return elapsed
  }
}

function checkCost(cost: unknown): number {
  return checkNumberAbove('cost', cost, 1)
}

/**
 * Creates a {@link Pacer}, in the manner of Guava's `RateLimiter`: callers wait their turn
 * instead of failing. Without `warmup` it stores the permits of idle time, up to `burst`, and
 * lets them go at once (SmoothBursty); with `warmup` the stored permits are spent slowly at
 * first, the rate ramping from `rate / 3` to `rate` over the warm-up period
 * (SmoothWarmingUp), for a backend that needs warming after idleness.
 *
 * @param options - `rate`, `burst` or `warmup`, and the injected clock and sleep
 * @returns the pacer
 * @throws RangeError or TypeError naming the option, for a bad value
 * @example
 * ```ts
 * const pacer = createPacer({ rate: 10 }) // 10 calls per second, in turn
 * for (const item of items) {
 *   await pacer.acquire()
 *   await send(item)
 * }
 * ```
 */
export function createPacer(options: PacerOptions): Pacer {
  if (options === undefined) {
    throw new TypeError('createPacer: expected an object with a rate, got undefined')
  }
  checkObject('createPacer', options)
  checkKnownKeys('createPacer', options, KNOWN)
  const rate = checkNumberAbove('rate', options.rate, undefined)
  const warmup =
    options.warmup === undefined ? undefined : checkNumberAbove('warmup', options.warmup, undefined)
  if (warmup !== undefined && options.burst !== undefined) {
    throw new TypeError(
      `burst: expected no burst with warmup (the warm-up period decides what is stored), got ${String(options.burst)}`,
    )
  }
  const burst = checkNumberAbove('burst', options.burst, rate, 0, true)
  const clock = elapsedTime(checkFunction<() => number>('clock', options.clock, Date.now))
  const sleep = checkFunction<Sleep>('sleep', options.sleep, defaultSleep)

  const shape = warmup === undefined ? burstyShape(rate, burst) : warmingUpShape(rate, warmup)
  let state = initialState(shape, clock())
  const queue: Waiter[] = []
  let pumping = false
  let wake: AbortController | undefined

  /** Resolves the waiters whose turn has come, in order, sleeping until the next one. */
  async function pump(): Promise<void> {
    pumping = true
    try {
      // A sleep that ran its course reached its turn, even if the clock reads a hair earlier
      // (float rounding, a timer a millisecond early): the turn is not slept for again.
      let reached = Number.NEGATIVE_INFINITY
      while (queue.length > 0) {
        const now = clock()
        while (queue.length > 0 && queue[0]!.grantAt <= Math.max(now, reached)) {
          const w = queue.shift()!
          w.signal?.removeEventListener('abort', w.onAbort)
          w.resolve(Math.max(0, now - w.calledAt))
        }
        if (queue.length === 0) break
        wake = new AbortController()
        const turn = queue[0]!.grantAt
        try {
          await sleep(turn - now, wake.signal)
          reached = turn
        } catch (error) {
          // Woken early because an earlier waiter left: look again. Any other failure of the
          // sleep would leave everyone waiting forever, so it fails them all instead.
          if (!wake.signal.aborted) {
            for (const w of queue.splice(0)) {
              w.signal?.removeEventListener('abort', w.onAbort)
              w.reject(error)
            }
          }
        }
      }
    } finally {
      pumping = false
      wake = undefined
    }
  }

  /**
   * A waiter gave up: its turn goes to those behind it, as if it had never asked. Their turns
   * are computed again from the schedule before its reservation, which costs one reservation
   * per waiter behind it.
   */
  function leave(w: Waiter): void {
    const index = queue.indexOf(w)
    if (index < 0) return
    queue.splice(index, 1)
    state = { ...w.before }
    for (const next of queue.slice(index)) {
      next.before = { ...state }
      next.grantAt = reserve(shape, state, next.calledAt, next.cost)
    }
    wake?.abort()
  }

  function take(cost: number, signal: AbortSignal | undefined, now: number): Promise<number> {
    const before = { ...state }
    const grantAt = reserve(shape, state, now, cost)
    if (queue.length === 0 && grantAt <= now) return Promise.resolve(0)
    return new Promise<number>((resolve, reject) => {
      const waiter: Waiter = {
        calledAt: now,
        cost,
        before,
        grantAt,
        resolve,
        reject,
        signal,
        onAbort: () => {
          leave(waiter)
          reject(signal?.reason as Error)
        },
      }
      queue.push(waiter)
      signal?.addEventListener('abort', waiter.onAbort, { once: true })
      if (!pumping) void pump()
    })
  }

  return {
    rate,
    get waiting(): number {
      return queue.length
    },
    // async: a bad argument rejects the promise rather than throwing; the body still runs
    // synchronously up to the reservation, so turns follow the order of the calls.
    async acquire(cost = 1, acquireOptions: AcquireOptions = {}): Promise<number> {
      const c = checkCost(cost)
      const signal = checkSignal('signal', acquireOptions.signal)
      if (signal?.aborted) throw signal.reason
      return take(c, signal, clock())
    },
    async tryAcquire(cost = 1, tryOptions: TryAcquireOptions = {}): Promise<boolean> {
      const c = checkCost(cost)
      const signal = checkSignal('signal', tryOptions.signal)
      const timeoutMs =
        tryOptions.timeoutMs === Number.POSITIVE_INFINITY
          ? Number.POSITIVE_INFINITY
          : checkNumberAbove('timeoutMs', tryOptions.timeoutMs, 0, 0, true)
      if (signal?.aborted) throw signal.reason
      const now = clock()
      if (earliestGrant(state, now) - now > timeoutMs) return false
      await take(c, signal, now)
      return true
    },
  }
}
