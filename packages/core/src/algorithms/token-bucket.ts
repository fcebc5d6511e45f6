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
 * Token bucket: a bucket of `burst` tokens refilled at `limit` per `windowMs`; a request
 * takes `cost` tokens. With a reservation the balance may go negative (debt), which later
 * requests pay back before they pass.
 *
 * Pro: allows short bursts up to the capacity while holding the long-run rate; cost per
 * request is natural; O(1) memory (two numbers).
 * Con: a full bucket admits `burst` requests at once, so the peak rate is not smoothed.
 * Pick it as the default for APIs, and whenever operations differ in cost.
 */
export const tokenBucket: Algorithm = {
  name: 'token-bucket',
  canReserve: true,
  stateSize: () => 2,
  consume(state, o, p, cost, nowMs, maxWaitMs, commit, out: AlgorithmResult) {
    const after = usedAt(state, o, p, nowMs) + cost
    out.limit = p.burst
    if (after <= p.burst + EPSILON) {
      out.allowed = true
      out.waitMs = 0
      out.retryAfterMs = 0
    } else {
      const waitMs = Math.ceil(((after - p.burst) * p.windowMs) / p.limit)
      if (maxWaitMs > 0 && waitMs <= maxWaitMs && cost <= p.burst) {
        out.allowed = true
        out.waitMs = waitMs
        out.retryAfterMs = 0
      } else {
        out.allowed = false
        out.waitMs = 0
        out.retryAfterMs = waitMs
        out.remaining = Math.max(0, Math.floor(p.burst - (after - cost) + EPSILON))
        out.resetMs = Math.ceil(((after - cost) * p.windowMs) / p.limit)
        return
      }
    }
    out.remaining = Math.max(0, Math.floor(p.burst - after + EPSILON))
    out.resetMs = Math.ceil((after * p.windowMs) / p.limit)
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
