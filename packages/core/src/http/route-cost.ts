import type { RouteCost } from './adapter-options.js'
import { ignoreSettlement, isPromiseLike } from './app-answers.js'
import type { WarnOnce } from './warn-once.js'

/**
 * The cost of one request through a mount. A cost function that throws or returns something
 * other than a positive finite number costs 1 and logs once: misconfiguration on the request
 * path never fails the request. An `async` one answers a promise, which is not waited for (a
 * rejection of it is handled, so it cannot end the process).
 *
 * @param cost - the mount's cost option
 * @param req - the framework's request
 * @param warn - the mount's warner
 * @returns the cost, or undefined for the default of 1
 */
export function routeCost<Req>(
  cost: RouteCost<Req> | undefined,
  req: Req,
  warn: WarnOnce,
): number | undefined {
  if (typeof cost !== 'function') return cost
  let value: unknown
  try {
    value = cost(req)
  } catch (err) {
    warn('FG_WRN_COST_INVALID', 'the cost function threw; charging a cost of 1', { err })
    return undefined
  }
  if (typeof value === 'number' && Number.isFinite(value) && value > 0) return value
  if (isPromiseLike(value)) {
    // Nobody waits for it: a rejection must not become an unhandled one, which ends the process.
    ignoreSettlement(value)
    warn(
      'FG_WRN_COST_INVALID',
      'the cost function answered a promise (cost is synchronous); charging 1',
    )
    return undefined
  }
  warn('FG_WRN_COST_INVALID', 'the cost function returned an invalid cost; charging 1', { value })
  return undefined
}
