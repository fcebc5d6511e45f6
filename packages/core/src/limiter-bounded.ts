import { FloodgateError, toError } from './errors.js'
import { isThenable, withTimeout } from './limiter-deadline.js'
import type { Logger } from './logger.js'

/** The limiter's calls about one client, each waiting on the store. */
export type ClientCall = 'get' | 'reset' | 'penalty' | 'reward'

/** What the store may still do with a call the limiter stopped waiting for. */
const LATE: Record<ClientCall, string> = {
  get: '',
  reset: '; the reset may still take effect when the store answers',
  penalty: '; the penalty may or may not have been applied',
  reward: '; the reward may or may not have been applied',
}

/**
 * Run one call about a client within `ms`, all of its store calls included: past it the call
 * rejects with `FG_ERR_STORE_TIMEOUT` naming it, and the store's late answer changes nothing
 * the caller sees. A throw (bad options, a store throwing) becomes a rejection.
 */
export function boundedClientCall<T>(
  call: ClientCall,
  ms: number,
  run: () => Promise<T>,
): Promise<T> {
  return withTimeout(
    Promise.resolve().then(run),
    ms,
    `limiter.${call}: the store did not answer within stateTimeoutMs (${ms} ms)${LATE[call]}`,
  )
}

/** One step of closing: what it is (for the log line) and its work. */
export interface CloseStep {
  readonly what: string
  readonly run: () => void | Promise<void>
}

/**
 * Run the steps in order, waiting for each until `ms` have passed since the first started.
 * Past that, the step still running is given up on, and the steps after it are started (their
 * resources must still be freed) but not waited for; what was given up on is logged once.
 * Settles within `ms` whatever the steps do; rejects with the first failure of a step it
 * waited for, once every step has run.
 */
export async function closeWithin(
  steps: readonly CloseStep[],
  ms: number,
  log: Logger,
): Promise<void> {
  let timer: ReturnType<typeof setTimeout> | undefined
  const deadline = new Promise<'late'>((resolve) => {
    timer = setTimeout(() => resolve('late'), ms)
  })
  const gaveUpOn: string[] = []
  let expired = false
  let failure: Error | undefined
  const failed = (err: unknown): void => {
    if (!expired) failure ??= toError(err)
  }
  for (const step of steps) {
    let out: void | Promise<void>
    try {
      out = step.run()
    } catch (err) {
      failed(err)
      continue
    }
    if (!isThenable(out)) continue
    // Promise.resolve: a foreign thenable becomes a promise whose failure is always handled.
    const done = Promise.resolve(out).then(() => 'done' as const, failed)
    if (expired || (await Promise.race([done, deadline])) === 'late') {
      expired = true
      gaveUpOn.push(step.what)
    }
  }
  clearTimeout(timer)
  if (gaveUpOn.length > 0) {
    const err = new FloodgateError(
      'FG_ERR_STORE_TIMEOUT',
      `limiter.close: ${gaveUpOn.join(', ')} did not settle within closeTimeoutMs (${ms} ms)`,
    )
    log.warn(
      { err, code: err.code, gaveUpOn },
      `close() gave up waiting after closeTimeoutMs (${ms} ms); what it gave up on may never finish`,
    )
  }
  if (failure !== undefined) throw failure
}
