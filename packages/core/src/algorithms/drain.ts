import { EPSILON, type AlgorithmParams } from './algorithm.js'

/**
 * Arithmetic shared by the algorithms that drain at `limit` per `windowMs` (token bucket,
 * leaky bucket) and by every algorithm that can reserve. The Redis Lua ports mirror it.
 */

/**
 * A level stored as `[level, lastMs]` at `(state, o)`, drained since `lastMs`: a token
 * bucket's used tokens, a leaky bucket's water. A clock that went backwards drains nothing.
 */
export function drainedLevel(
  state: Float64Array,
  o: number,
  p: AlgorithmParams,
  nowMs: number,
): number {
  const level = state[o]!
  if (level <= 0) return 0
  const elapsed = nowMs - state[o + 1]!
  if (elapsed <= 0) return level
  const drained = (elapsed * p.limit) / p.windowMs
  return drained >= level - EPSILON ? 0 : level - drained
}

/**
 * Milliseconds for `units` to drain, rounded up. `EPSILON` comes off first so that the answer
 * is the first whole millisecond at which the `<= capacity + EPSILON` admission test passes:
 * without it an exact boundary computed a hair high (float noise) would round one ms too far.
 */
export function msToDrain(units: number, p: AlgorithmParams): number {
  return units > EPSILON ? Math.ceil(((units - EPSILON) * p.windowMs) / p.limit) : 0
}

/**
 * The retry hint of a refusal that would pass after `waitMs`. With a queue (`maxWaitMs > 0`)
 * and a cost that can ever fit, the request may come back as soon as its wait fits in the
 * queue; otherwise when the wait is over. Never below 1 ms: a refusal always asks to wait.
 */
export function refusalRetryMs(waitMs: number, maxWaitMs: number, fits: boolean): number {
  return maxWaitMs > 0 && fits ? Math.max(1, Math.ceil(waitMs - maxWaitMs)) : Math.max(1, waitMs)
}
