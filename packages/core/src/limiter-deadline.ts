import type { AlgorithmResult } from './algorithms/algorithm.js'
import { FloodgateError } from './errors.js'

/** How a store's asynchronous answer ends up: a decision either way. */
export interface DeadlineHandlers<T> {
  answered(results: readonly AlgorithmResult[]): T | PromiseLike<T>
  failed(err: unknown): T
  /** The answer came after the deadline, when the request had already passed unjudged. */
  late(results: readonly AlgorithmResult[]): void
}

function timeoutError(ms: number, why: string): FloodgateError {
  return new FloodgateError('FG_ERR_STORE_TIMEOUT', `store did not answer within ${why} (${ms} ms)`)
}

interface Waiter {
  readonly sinceMs: number
  fail(): void
}

/**
 * The backstop for stores that promise to settle every call within the deadline themselves
 * (`settlesWithinMs`): one sweep timer for all their calls instead of a timer per call, so a
 * store that breaks its promise delays a request by at most twice `timeoutMs` plus a sweep,
 * and never hangs it.
 */
export class DeadlineWatchdog {
  private readonly waiting = new Set<Waiter>()
  private timer: ReturnType<typeof setInterval> | undefined

  constructor(private readonly timeoutMs: number) {}

  add(waiter: Waiter): void {
    this.waiting.add(waiter)
    if (this.timer === undefined) {
      this.timer = setInterval(() => this.sweep(), this.timeoutMs)
      this.timer.unref()
    }
  }

  /** False when the watchdog already failed this waiter. */
  remove(waiter: Waiter): boolean {
    return this.waiting.delete(waiter)
  }

  private sweep(): void {
    const overdue = Date.now() - 2 * this.timeoutMs
    for (const w of this.waiting) {
      if (w.sinceMs > overdue) continue
      this.waiting.delete(w)
      w.fail()
    }
    if (this.waiting.size === 0) this.stop()
  }

  stop(): void {
    clearInterval(this.timer)
    this.timer = undefined
  }
}

/**
 * Wait for a store's answer for at most `timeoutMs`; past it, `failed` runs with a
 * `FG_ERR_STORE_TIMEOUT` error. With a `watchdog` (a store that settles every call within the
 * deadline itself), no timer is armed per call and the watchdog only catches a broken promise.
 */
export function withinDeadline<T>(
  pending: Promise<readonly AlgorithmResult[]>,
  timeoutMs: number,
  watchdog: DeadlineWatchdog | undefined,
  on: DeadlineHandlers<T>,
): Promise<T> {
  if (watchdog !== undefined) {
    return new Promise<T>((resolve) => {
      const waiter: Waiter = {
        sinceMs: Date.now(),
        fail: () =>
          resolve(on.failed(timeoutError(2 * timeoutMs, 'twice the settlesWithinMs it promised'))),
      }
      watchdog.add(waiter)
      pending.then(
        (results) => {
          if (watchdog.remove(waiter)) resolve(on.answered(results))
          else on.late(results)
        },
        (err: unknown) => {
          if (watchdog.remove(waiter)) resolve(on.failed(err))
        },
      )
    })
  }
  return new Promise<T>((resolve) => {
    let settled = false
    const timer = setTimeout(() => {
      settled = true
      resolve(on.failed(timeoutError(timeoutMs, 'timeoutMs')))
    }, timeoutMs)
    pending.then(
      (results) => {
        if (settled) {
          on.late(results)
          return
        }
        settled = true
        clearTimeout(timer)
        resolve(on.answered(results))
      },
      (err: unknown) => {
        if (settled) return
        settled = true
        clearTimeout(timer)
        resolve(on.failed(err))
      },
    )
  })
}

/** The deadline passed before the store answered: not an answer to time (a late one is). */
export function isTimeout(err: unknown): boolean {
  return err instanceof FloodgateError && err.code === 'FG_ERR_STORE_TIMEOUT'
}

export function isThenable<T>(x: T | Promise<T>): x is Promise<T> {
  return typeof x === 'object' && x !== null && typeof (x as { then?: unknown }).then === 'function'
}

/** `pending`, or a rejection once `ms` have passed without an answer. */
export function withTimeout<T>(pending: Promise<T>, ms: number): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const timer = setTimeout(
      () =>
        reject(new FloodgateError('FG_ERR_STORE_TIMEOUT', `store did not answer within ${ms} ms`)),
      ms,
    )
    Promise.resolve(pending).then(
      (v) => {
        clearTimeout(timer)
        resolve(v)
      },
      (err: unknown) => {
        clearTimeout(timer)
        reject(err instanceof Error ? err : new Error(String(err)))
      },
    )
  })
}
