import { EPSILON, unitsLeft, type Algorithm } from './algorithm.js'
import { drainedLevel, msToDrain, writeLevel } from './drain.js'

// State layout: [level, lastMs]. `level` is the water in the bucket (units admitted and not
// yet drained); all zeros is an empty bucket. It never exceeds `burst`: in shaper mode a
// queued request waits inside the bucket instead of going into debt.
const LEVEL = 0
const LAST = 1

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
 * `resetMs = ceil((after - EPSILON) × windowMs / limit)`; `remaining` = the largest whole `n` with `after + n <= burst + EPSILON`.
 */
export const leakyBucket: Algorithm = {
  name: 'leaky-bucket',
  canReserve: true,
  stateSize: () => 2,
  consume(state, o, p, cost, nowMs, maxWaitMs, commit, out) {
    const level = drainedLevel(state, o, p, nowMs)
    const after = level + cost
    out.limit = p.burst
    out.waitMs = 0
    const overflowMs = after > p.burst + EPSILON ? msToDrain(after - p.burst, p) : 0
    // In shaper mode the request leaves when the water ahead of it has drained.
    const queueMs = maxWaitMs > 0 ? msToDrain(level, p) : 0
    if (overflowMs === 0 && queueMs <= maxWaitMs) {
      out.allowed = true
      out.waitMs = queueMs
      out.retryAfterMs = 0
      out.remaining = unitsLeft(after, p.burst)
      out.resetMs = msToDrain(after, p)
      if (commit) writeLevel(state, o, after, nowMs)
      return
    }
    out.allowed = false
    // The same request passes once it fits in the bucket and (shaper) its wait fits in maxWaitMs.
    const shaperMs = maxWaitMs > 0 ? Math.ceil(queueMs - maxWaitMs) : 0
    out.retryAfterMs = Math.max(1, overflowMs, shaperMs)
    out.remaining = unitsLeft(level, p.burst)
    out.resetMs = msToDrain(level, p)
  },
  refund(state, o, p, cost, nowMs) {
    const level = drainedLevel(state, o, p, nowMs)
    writeLevel(state, o, level > cost ? level - cost : 0, nowMs)
  },
  idleAtMs(state, o, p) {
    return state[o + LAST]! + (state[o + LEVEL]! * p.windowMs) / p.limit
  },
}
