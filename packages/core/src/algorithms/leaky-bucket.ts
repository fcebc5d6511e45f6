import { EPSILON, type Algorithm, type AlgorithmParams } from './algorithm.js'

// State layout: [level, lastMs]. `level` is the water in the bucket (units admitted and not
// yet drained); all zeros is an empty bucket. It never exceeds `burst`: in shaper mode a
// queued request waits inside the bucket instead of going into debt.
const LEVEL = 0
const LAST = 1

/** Water left at `nowMs` after draining at `limit` per `windowMs` since the last update. */
function levelAt(state: Float64Array, o: number, p: AlgorithmParams, nowMs: number): number {
  const level = state[o + LEVEL]!
  if (level <= 0) return 0
  const elapsed = nowMs - state[o + LAST]!
  // A clock that went backwards drains nothing rather than a negative amount.
  if (elapsed <= 0) return level
  const drained = (elapsed * p.limit) / p.windowMs
  return drained >= level - EPSILON ? 0 : level - drained
}

/** Milliseconds for `units` to drain, with the EPSILON slack of the admission test. */
function msFor(units: number, p: AlgorithmParams): number {
  return units > EPSILON ? Math.ceil(((units - EPSILON) * p.windowMs) / p.limit) : 0
}

/**
 * Leaky bucket: a bucket of capacity `burst` that drains at a constant `limit` per
 * `windowMs`; a request pours `cost` units in, and a request that would overflow is refused.
 *
 * It runs in two modes. As a meter (`maxWaitMs` 0, the `reject` action) it admits exactly
 * what a token bucket of the same capacity admits. As a shaper (`maxWaitMs > 0`, the `queue`
 * action) every admitted request waits until the water ahead of it has drained, so requests
 * leave evenly spaced at the drain rate; only a full bucket, or a wait beyond `maxWaitMs`,
 * refuses.
 *
 * Pro: smooths traffic into a steady stream (the shaper protects a fragile upstream from
 * bursts entirely); O(1) memory; the bucket (and the wait) is bounded by `burst`.
 * Con: in shaper mode even a lone request may wait, and latency grows with the queue; as a
 * meter it is no different from a token bucket.
 * Pick it with `onLimit: queue` in front of something that needs an even rate (a payment
 * gateway, a third-party API with a strict per-second quota, a database writer).
 *
 * Formulas: `level' = max(0, level - elapsed × limit / windowMs)` (0 within `EPSILON`),
 * `after = level' + cost`, a full bucket when `after > burst + EPSILON`;
 * shaper `waitMs = ceil((level' - EPSILON) × windowMs / limit)`;
 * `resetMs = ceil((after - EPSILON) × windowMs / limit)`; `remaining = floor(burst - after + EPSILON)`.
 */
export const leakyBucket: Algorithm = {
  name: 'leaky-bucket',
  canReserve: true,
  stateSize: () => 2,
  consume(state, o, p, cost, nowMs, maxWaitMs, commit, out) {
    const level = levelAt(state, o, p, nowMs)
    const after = level + cost
    out.limit = p.burst
    out.waitMs = 0
    const overflowMs = after > p.burst + EPSILON ? msFor(after - p.burst, p) : 0
    // In shaper mode the request leaves when the water ahead of it has drained.
    const queueMs = maxWaitMs > 0 ? msFor(level, p) : 0
    if (overflowMs === 0 && queueMs <= maxWaitMs) {
      out.allowed = true
      out.waitMs = queueMs
      out.retryAfterMs = 0
      out.remaining = Math.max(0, Math.floor(p.burst - after + EPSILON))
      out.resetMs = msFor(after, p)
      if (commit) {
        state[o + LEVEL] = after
        state[o + LAST] = Math.max(state[o + LAST]!, nowMs)
      }
      return
    }
    out.allowed = false
    // The same request passes once it fits in the bucket and (shaper) its wait fits in maxWaitMs.
    const shaperMs = maxWaitMs > 0 ? Math.ceil(queueMs - maxWaitMs) : 0
    out.retryAfterMs = Math.max(1, overflowMs, shaperMs)
    out.remaining = Math.max(0, Math.floor(p.burst - level + EPSILON))
    out.resetMs = msFor(level, p)
  },
  refund(state, o, p, cost, nowMs) {
    const level = levelAt(state, o, p, nowMs)
    state[o + LEVEL] = level > cost ? level - cost : 0
    state[o + LAST] = Math.max(state[o + LAST]!, nowMs)
  },
  idleAtMs(state, o, p) {
    return state[o + LAST]! + (state[o + LEVEL]! * p.windowMs) / p.limit
  },
}
