import { EPSILON, unitsLeft, type AlgorithmParams, type AlgorithmResult } from './algorithm.js'

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
 * Record `value` (a level, or GCRA's schedule ahead) as of `nowMs` in a `[value, timeMs]`
 * state, the time never moving back. A state holding nothing and dated no later than now is
 * fresh: it is written as all zeros, forgetting its time exactly when RedisStore deletes the
 * key (its life is 0), so that a clock stepping back later finds a fresh state in both stores.
 */
export function writeLevel(state: Float64Array, o: number, value: number, nowMs: number): void {
  const last = state[o + 1]!
  if (value <= 0 && last <= nowMs) {
    state[o] = 0
    state[o + 1] = 0
  } else {
    state[o] = value
    state[o + 1] = last > nowMs ? last : nowMs
  }
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

/**
 * Decide a request of `cost` units on a bucket with `used` units taken (a token bucket's
 * balance, or GCRA's schedule counted in units), writing every field of `out`.
 *
 * @returns the units taken after the request when it is admitted (to be recorded), else -1
 */
export function takeUnits(
  used: number,
  cost: number,
  p: AlgorithmParams,
  maxWaitMs: number,
  out: AlgorithmResult,
): number {
  const after = used + cost
  out.limit = p.burst
  if (after <= p.burst + EPSILON) {
    out.allowed = true
    out.waitMs = 0
    out.retryAfterMs = 0
  } else {
    const waitMs = msToDrain(after - p.burst, p)
    if (maxWaitMs > 0 && waitMs <= maxWaitMs && cost <= p.burst + EPSILON) {
      out.allowed = true
      out.waitMs = waitMs
      out.retryAfterMs = 0
    } else {
      out.allowed = false
      out.waitMs = 0
      // A cost above the capacity never passes; the hint is then only a back-off.
      out.retryAfterMs = refusalRetryMs(waitMs, maxWaitMs, cost <= p.burst + EPSILON)
      out.remaining = unitsLeft(used, p.burst)
      out.resetMs = msToDrain(used, p)
      return -1
    }
  }
  out.remaining = unitsLeft(after, p.burst)
  out.resetMs = msToDrain(after, p)
  return after
}
