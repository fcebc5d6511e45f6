import type { AlgorithmResult } from './algorithms/algorithm.js'
import { FloodgateError } from './errors.js'

/** How a store's asynchronous answer ends up: a decision either way. */
export interface DeadlineHandlers<T> {
  answered(results: readonly AlgorithmResult[]): T
  failed(err: unknown): T
  /** The answer came after the deadline, when the request had already passed unjudged. */
  late(results: readonly AlgorithmResult[]): void
}

/**
 * Wait for a store's answer for at most `timeoutMs`; past it, `failed` runs with a
 * `FG_ERR_STORE_TIMEOUT` error. `storeKeepsDeadline` skips the timer for stores that settle
 * every call within the deadline themselves.
 */
export function withinDeadline<T>(
  pending: Promise<readonly AlgorithmResult[]>,
  timeoutMs: number,
  storeKeepsDeadline: boolean,
  on: DeadlineHandlers<T>,
): Promise<T> {
  if (storeKeepsDeadline) {
    // A second timer per call would only cost.
    return pending.then(
      (results) => on.answered(results),
      (err: unknown) => on.failed(err),
    )
  }
  return new Promise<T>((resolve) => {
    let settled = false
    const timer = setTimeout(() => {
      settled = true
      const err = new FloodgateError(
        'FG_ERR_STORE_TIMEOUT',
        `store did not answer within timeoutMs (${timeoutMs} ms)`,
      )
      resolve(on.failed(err))
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
