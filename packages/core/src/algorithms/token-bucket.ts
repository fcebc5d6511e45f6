import { EPSILON, type Algorithm, type AlgorithmParams, type AlgorithmResult } from './algorithm.js'

// State layout: [used, lastMs]. `used` is capacity minus tokens, so the all-zero state is a
// full bucket; it exceeds `burst` only while a reservation (debt) is outstanding.
const USED = 0
const LAST = 1

/** Units consumed at `nowMs`, after the refill since the last update. */
function usedAt(state: Float64Array, o: number, p: AlgorithmParams, nowMs: number): number {
  const used = state[o + USED]!
  if (used <= 0) return 0
  const elapsed = nowMs - state[o + LAST]!
  // A clock that went backwards refills nothing rather than a negative amount.
  if (elapsed <= 0) return used
  const refilled = (elapsed * p.limit) / p.windowMs
  return refilled >= used - EPSILON ? 0 : used - refilled
}

/**
 * Milliseconds until `units` tokens have refilled, rounded up. `EPSILON` comes off first so
 * that the answer is the first whole millisecond at which the `<= burst + EPSILON` test in
 * `consume` passes: without it an exact boundary computed a hair high (float noise) would
 * round up one millisecond too far.
 */
function msFor(units: number, p: AlgorithmParams): number {
  return units > EPSILON ? Math.ceil(((units - EPSILON) * p.windowMs) / p.limit) : 0
}

/**
 * Token bucket: a bucket of `burst` tokens refilled at `limit` per `windowMs`; a request
 * takes `cost` tokens. With a reservation the balance may go negative (debt), which later
 * requests pay back before they pass.
 *
 * Pro: allows short bursts up to the capacity while holding the long-run rate; cost per
 * request is natural; O(1) memory (two numbers).
 * Con: a full bucket admits `burst` requests at once, so the peak rate is not smoothed.
 * Pick it as the default for APIs, and whenever operations differ in cost.
 *
 * Formulas (the Redis scripts mirror them): `used' = max(0, used - elapsed * limit / windowMs)`
 * (0 when within `EPSILON`), `after = used' + cost`, allowed when `after <= burst + EPSILON`;
 * `waitMs = ceil((after - burst - EPSILON) * windowMs / limit)`;
 * `resetMs = ceil((after - EPSILON) * windowMs / limit)`; `remaining = floor(burst - after + EPSILON)`.
 */
export const tokenBucket: Algorithm = {
  name: 'token-bucket',
  canReserve: true,
  stateSize: () => 2,
  consume(state, o, p, cost, nowMs, maxWaitMs, commit, out: AlgorithmResult) {
    const used = usedAt(state, o, p, nowMs)
    const after = used + cost
    out.limit = p.burst
    if (after <= p.burst + EPSILON) {
      out.allowed = true
      out.waitMs = 0
      out.retryAfterMs = 0
    } else {
      const waitMs = msFor(after - p.burst, p)
      if (maxWaitMs > 0 && waitMs <= maxWaitMs && cost <= p.burst + EPSILON) {
        out.allowed = true
        out.waitMs = waitMs
        out.retryAfterMs = 0
      } else {
        out.allowed = false
        out.waitMs = 0
        // With a queue, the request can pass as soon as its wait fits in `maxWaitMs`. A cost
        // above the capacity never passes; the hint is then only a back-off.
        out.retryAfterMs =
          maxWaitMs > 0 && cost <= p.burst + EPSILON
            ? Math.max(1, Math.ceil(waitMs - maxWaitMs))
            : Math.max(1, waitMs)
        out.remaining = Math.max(0, Math.floor(p.burst - used + EPSILON))
        out.resetMs = msFor(used, p)
        return
      }
    }
    out.remaining = Math.max(0, Math.floor(p.burst - after + EPSILON))
    out.resetMs = msFor(after, p)
    if (commit) {
      state[o + USED] = after
      state[o + LAST] = Math.max(state[o + LAST]!, nowMs)
    }
  },
  refund(state, o, p, cost, nowMs) {
    const used = usedAt(state, o, p, nowMs)
    state[o + USED] = used > cost ? used - cost : 0
    state[o + LAST] = Math.max(state[o + LAST]!, nowMs)
  },
  idleAtMs(state, o, p) {
    return state[o + LAST]! + (state[o + USED]! * p.windowMs) / p.limit
  },
}
