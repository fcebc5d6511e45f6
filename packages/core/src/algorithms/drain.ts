import {
  pastHorizon,
  unitsLeft,
  type Algorithm,
  type AlgorithmParams,
  type AlgorithmResult,
} from './algorithm.js'
import { MAX_EXACT_SCALED, exactRate, wholeSteps, type ExactRate } from './exact-rate.js'

/**
 * Arithmetic shared by the algorithms that drain at `limit` per `windowMs` (token bucket,
 * GCRA, leaky bucket) and by every algorithm that can reserve. The Redis Lua ports mirror it.
 *
 * The buckets decide in steps of `1 / rate.scale` units (see `exactRate`): every balance,
 * cost and drain is then a whole number, and so exact, where a balance in units is a fraction
 * that a double only approximates. The state still stores the balance in its own unit (units,
 * or GCRA's milliseconds ahead), `factor` steps each, and reads it back to the nearest whole
 * step, so the stored format is unchanged.
 */

/**
 * The balance of a `[value, lastMs]` state at `(state, o)`, in steps (`value × factor`),
 * drained since `lastMs` at `rate.perMs` steps per millisecond: a token bucket's used tokens,
 * GCRA's schedule ahead, a leaky bucket's water. A clock that went backwards drains nothing;
 * one that went back past the horizon (`pastHorizon`) finds the balance forgotten.
 */
export function drainedSteps(
  state: Float64Array,
  o: number,
  factor: number,
  rate: ExactRate,
  nowMs: number,
): number {
  const value = state[o]!
  if (!(value > 0)) return 0
  const last = state[o + 1]!
  if (pastHorizon(last, nowMs)) return 0
  const steps = wholeSteps(value * factor)
  const elapsed = nowMs - last
  if (!(elapsed > 0)) return steps
  // Past 2^53 the product is inexact, but then far above any balance kept exactly.
  const drained = elapsed * rate.perMs
  return drained >= steps - rate.tol ? 0 : steps - drained
}

/**
 * Record `value` (a level, or GCRA's schedule ahead) as of `nowMs` in a `[value, timeMs]`
 * state, the time never moving back (unless it lay past the horizon, where the state read as
 * forgotten). A state holding nothing and dated no later than now is fresh: it is written as
 * all zeros, forgetting its time exactly when RedisStore deletes the key (its life is 0), so
 * that a clock stepping back later finds a fresh state in both stores.
 */
export function writeLevel(state: Float64Array, o: number, value: number, nowMs: number): void {
  const stamped = state[o + 1]!
  const last = pastHorizon(stamped, nowMs) ? nowMs : stamped
  if (value <= 0 && last <= nowMs) {
    state[o] = 0
    state[o + 1] = 0
  } else {
    state[o] = value
    state[o + 1] = last > nowMs ? last : nowMs
  }
}

/**
 * Milliseconds for `steps` to drain, rounded up: the first whole millisecond at which the
 * admission test (`<= capacity + tol`) passes. Exact for whole steps below 2^53, where
 * `ceil(steps / perMs)` of a correctly rounded quotient is the exact ceiling.
 */
export function stepsToMs(steps: number, rate: ExactRate): number {
  return steps > rate.tol ? Math.ceil((steps - rate.tol) / rate.perMs) : 0
}

/**
 * The epoch millisecond from which a `[value, lastMs]` state of `factor` steps per value is
 * fresh again, a whole number: a fraction of a millisecond added to an epoch time rounds to
 * the nearest 2^-12 ms and could fall before the drain is done. 0 for a state dated past the
 * horizon at `nowMs`: it reads as fresh (see {@link drainedSteps}), so a store may drop it.
 */
export function idleAtSteps(
  state: Float64Array,
  o: number,
  factor: number,
  rate: ExactRate,
  nowMs: number,
): number {
  const value = state[o]!
  const last = state[o + 1]!
  if (pastHorizon(last, nowMs)) return 0
  return value > 0 ? last + stepsToMs(wholeSteps(value * factor), rate) : last
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
 * The value to store for an admitted balance of `after` steps (`after / factor`), writing
 * `remaining` and `resetMs` from what the next request reads back from it: within the exact
 * range that is `after` again; past it, or with a fractional cost, it may be a few float steps
 * off, and the answers must hold for that request.
 */
export function admittedValue(
  after: number,
  factor: number,
  p: AlgorithmParams,
  rate: ExactRate,
  out: AlgorithmResult,
): number {
  const value = after / factor
  // A whole number of steps within the exact range reads back as itself: skip the round trip.
  const next =
    Number.isInteger(after) && after <= MAX_EXACT_SCALED ? after : wholeSteps(value * factor)
  out.remaining = unitsLeft(next, p.burst, rate.scale, rate.tol, rate.perStep)
  out.resetMs = stepsToMs(next, rate)
  return value
}

/**
 * Decide a request of `cost` units on a bucket with `used` steps taken (a token bucket's
 * balance, or GCRA's schedule; `factor` steps per stored value), writing every field of `out`.
 *
 * @returns the value to store when the request is admitted, else -1
 */
export function takeSteps(
  used: number,
  cost: number,
  p: AlgorithmParams,
  rate: ExactRate,
  factor: number,
  maxWaitMs: number,
  out: AlgorithmResult,
): number {
  const cap = p.burst * rate.scale
  const room = cap + rate.tol
  const need = cost * rate.scale
  const after = used + need
  out.limit = p.burst
  if (after <= room) {
    out.allowed = true
    out.waitMs = 0
    out.retryAfterMs = 0
  } else {
    const waitMs = stepsToMs(after - cap, rate)
    if (maxWaitMs > 0 && waitMs <= maxWaitMs && need <= room) {
      out.allowed = true
      out.waitMs = waitMs
      out.retryAfterMs = 0
    } else {
      out.allowed = false
      out.waitMs = 0
      // A cost above the capacity never passes; the hint is then only a back-off.
      out.retryAfterMs = refusalRetryMs(waitMs, maxWaitMs, need <= room)
      out.remaining = unitsLeft(used, p.burst, rate.scale, rate.tol, rate.perStep)
      out.resetMs = stepsToMs(used, rate)
      return -1
    }
  }
  return admittedValue(after, factor, p, rate, out)
}

/** The methods a bucket of `[value, lastMs]` shares: the token bucket's, GCRA's. */
export type StepBucket = Pick<Algorithm, 'consume' | 'refund' | 'idleAtMs'> &
  Required<Pick<Algorithm, 'charge'>>

/**
 * The token bucket's decisions over a `[value, lastMs]` state whose value is units taken
 * (`inMs` false: `scale` steps each) or, for GCRA, milliseconds of schedule ahead (`inMs`
 * true: `perMs` steps each). The two algorithms differ only in that unit.
 */
export function stepBucket(inMs: boolean): StepBucket {
  return {
    consume(state, o, p, cost, nowMs, maxWaitMs, commit, out) {
      const rate = exactRate(p.limit, p.windowMs)
      const factor = inMs ? rate.perMs : rate.scale
      const used = drainedSteps(state, o, factor, rate, nowMs)
      const value = takeSteps(used, cost, p, rate, factor, maxWaitMs, out)
      if (commit && value >= 0) writeLevel(state, o, value, nowMs)
    },
    refund(state, o, p, cost, nowMs) {
      const rate = exactRate(p.limit, p.windowMs)
      const factor = inMs ? rate.perMs : rate.scale
      const used = drainedSteps(state, o, factor, rate, nowMs)
      const back = cost * rate.scale
      writeLevel(state, o, used > back ? (used - back) / factor : 0, nowMs)
    },
    charge(state, o, p, cost, nowMs) {
      const rate = exactRate(p.limit, p.windowMs)
      const factor = inMs ? rate.perMs : rate.scale
      const used = drainedSteps(state, o, factor, rate, nowMs)
      writeLevel(state, o, (used + cost * rate.scale) / factor, nowMs)
    },
    idleAtMs(state, o, p, nowMs) {
      const rate = exactRate(p.limit, p.windowMs)
      return idleAtSteps(state, o, inMs ? rate.perMs : rate.scale, rate, nowMs)
    },
  }
}
