import type { AlgorithmResult } from './algorithms/algorithm.js'
import { FloodgateError, toError } from './errors.js'

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

/** A call linked into the watchdog's queue, oldest first. */
interface Watched {
  /** The watchdog's sweep count when the call started. */
  round: number
  prev: Watched | undefined
  next: Watched | undefined
  expire(): void
}

/**
 * The backstop for stores that promise to settle every call within the deadline themselves
 * (`settlesWithinMs`): one sweep timer for all their calls instead of a timer per call. A call
 * still waiting at the third sweep after it started (at least twice `decisionTimeoutMs`, at most
 * three times) fails, so a store that breaks its promise delays a request but never hangs it.
 * Calls are counted in sweeps, not timed, and kept in a linked queue: starting and ending one
 * reads no clock and hashes nothing, and an answered call is unlinked at once (garbage while
 * still young).
 */
export class DeadlineWatchdog {
  private head: Watched | undefined
  private tail: Watched | undefined
  private round = 0
  private timer: ReturnType<typeof setInterval> | undefined

  constructor(readonly timeoutMs: number) {}

  add(call: Watched): void {
    call.round = this.round
    call.prev = this.tail
    if (this.tail === undefined) this.head = call
    else this.tail.next = call
    this.tail = call
    if (this.timer === undefined) {
      this.timer = setInterval(() => this.sweep(), this.timeoutMs)
      this.timer.unref()
    }
  }

  /** False when the watchdog already failed this call. */
  remove(call: Watched): boolean {
    if (call.round < 0) return false
    this.unlink(call)
    return true
  }

  private unlink(call: Watched): void {
    const { prev, next } = call
    if (prev === undefined) this.head = next
    else prev.next = next
    if (next === undefined) this.tail = prev
    else next.prev = prev
    call.prev = call.next = undefined
    call.round = -1
  }

  private sweep(): void {
    const due = ++this.round - 3
    // Rounds only grow along the queue: the first call not yet due ends the sweep.
    while (this.head !== undefined && this.head.round <= due) {
      const call = this.head
      this.unlink(call)
      call.expire()
    }
    if (this.head === undefined) this.stop()
  }

  stop(): void {
    clearInterval(this.timer)
    this.timer = undefined
  }
}

/** One call waiting on a store that keeps its own deadline, watched by the watchdog. */
class WatchedCall<T> implements Watched {
  round = 0
  prev: Watched | undefined = undefined
  next: Watched | undefined = undefined

  constructor(
    private readonly watchdog: DeadlineWatchdog,
    private readonly resolve: Resolve<T>,
    private readonly reject: Reject,
    private readonly on: DeadlineHandlers<T>,
  ) {}

  answered(results: readonly AlgorithmResult[]): void {
    if (this.watchdog.remove(this)) settleAnswered(this.resolve, this.reject, this.on, results)
    else lateQuietly(this.on, results)
  }

  failed(err: unknown): void {
    if (this.watchdog.remove(this)) settleFailed(this.resolve, this.reject, this.on, err)
  }

  expire(): void {
    const ms = 2 * this.watchdog.timeoutMs
    settleFailed(
      this.resolve,
      this.reject,
      this.on,
      timeoutError(ms, 'twice the settlesWithinMs it promised'),
    )
  }
}

/** The ends of the promise a caller waits on (two fields, not an object more per call). */
type Resolve<T> = (value: T | PromiseLike<T>) => void
type Reject = (err: unknown) => void

/**
 * The decision from a store's answer. The handlers read the answer, and an answer may throw
 * when read (a getter, a Proxy): that is the store failing, decided as such. Only when failing
 * throws too does the caller's promise reject; it never stays pending.
 */
function settleAnswered<T>(
  resolve: Resolve<T>,
  reject: Reject,
  on: DeadlineHandlers<T>,
  results: readonly AlgorithmResult[],
): void {
  let decided: T | PromiseLike<T>
  try {
    decided = on.answered(results)
  } catch (err) {
    settleFailed(resolve, reject, on, err)
    return
  }
  resolve(decided)
}

function settleFailed<T>(
  resolve: Resolve<T>,
  reject: Reject,
  on: DeadlineHandlers<T>,
  err: unknown,
): void {
  try {
    resolve(on.failed(err))
  } catch (failure) {
    reject(failure)
  }
}

/** A late answer that cannot be read has nothing to give back: the request already passed. */
function lateQuietly<T>(on: DeadlineHandlers<T>, results: readonly AlgorithmResult[]): void {
  try {
    on.late(results)
  } catch {
    // Nothing to undo that can be known.
  }
}

/**
 * Wait for a store's answer for at most `decisionTimeoutMs`; past it, `failed` runs with a
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
    return new Promise<T>((resolve, reject) => {
      const call = new WatchedCall(watchdog, resolve, reject, on)
      watchdog.add(call)
      pending.then(
        (results) => call.answered(results),
        (err: unknown) => call.failed(err),
      )
    })
  }
  return new Promise<T>((resolve, reject) => {
    let settled = false
    const timer = setTimeout(() => {
      settled = true
      settleFailed(resolve, reject, on, timeoutError(timeoutMs, 'decisionTimeoutMs'))
    }, timeoutMs)
    pending.then(
      (results) => {
        if (settled) {
          lateQuietly(on, results)
          return
        }
        settled = true
        clearTimeout(timer)
        settleAnswered(resolve, reject, on, results)
      },
      (err: unknown) => {
        if (settled) return
        settled = true
        clearTimeout(timer)
        settleFailed(resolve, reject, on, err)
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

/**
 * `pending`, or a rejection with `FG_ERR_STORE_TIMEOUT` once `ms` have passed without an
 * answer (`message` says what missed the deadline). A rejection with something that is not an
 * Error rejects with an Error (see `toError`).
 */
export function withTimeout<T>(
  pending: Promise<T>,
  ms: number,
  message = `store did not answer within ${ms} ms`,
): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const timer = setTimeout(() => reject(new FloodgateError('FG_ERR_STORE_TIMEOUT', message)), ms)
    Promise.resolve(pending).then(
      (v) => {
        clearTimeout(timer)
        resolve(v)
      },
      (err: unknown) => {
        clearTimeout(timer)
        reject(toError(err))
      },
    )
  })
}
