import { unitsLeft, type Algorithm } from './algorithm.js'
import { admittedValue, drainedSteps, stepBucket, stepsToMs, writeLevel } from './drain.js'
import { exactRate } from './exact-rate.js'

// State layout: [level, lastMs]. `level` is the water in the bucket (units admitted and not
// yet drained); all zeros is an empty bucket. It never exceeds `burst`: in shaper mode a
// queued request waits inside the bucket instead of going into debt.
// drainedSteps and writeLevel use [level, lastMs] at offsets 0 and 1.

// A refund and the idle time are the token bucket's: water and balance are counted alike.
const tokenBucketMethods = stepBucket(false)

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
 * Formulas, in the token bucket's steps (see its formulas): `S' = max(0, S - elapsed × perMs)`,
 * `after = S' + cost × scale`, a full bucket when `after > burst × scale + tol`;
 * shaper `waitMs = ceil((S' - tol) / perMs)`; `resetMs = ceil((after - tol) / perMs)`;
 * `remaining` = the largest whole `n` with `after + n × scale <= burst × scale + tol`.
 */
export const leakyBucket: Algorithm = {
  name: 'leaky-bucket',
  canReserve: true,
  stateSize: () => 2,
  consume(state, o, p, cost, nowMs, maxWaitMs, commit, out) {
    const rate = exactRate(p.limit, p.windowMs)
    const level = drainedSteps(state, o, rate.scale, rate, nowMs)
    const cap = p.burst * rate.scale
    const after = level + cost * rate.scale
    out.limit = p.burst
    out.waitMs = 0
    const overflowMs = after > cap + rate.tol ? stepsToMs(after - cap, rate) : 0
    // In shaper mode the request leaves when the water ahead of it has drained.
    const queueMs = maxWaitMs > 0 ? stepsToMs(level, rate) : 0
    if (overflowMs === 0 && queueMs <= maxWaitMs) {
      out.allowed = true
      out.waitMs = queueMs
      out.retryAfterMs = 0
      const value = admittedValue(after, rate.scale, p, rate, out)
      if (commit) writeLevel(state, o, value, nowMs)
      return
    }
    out.allowed = false
    // The same request passes once it fits in the bucket and (shaper) its wait fits in maxWaitMs.
    const shaperMs = maxWaitMs > 0 ? Math.ceil(queueMs - maxWaitMs) : 0
    out.retryAfterMs = Math.max(1, overflowMs, shaperMs)
    out.remaining = unitsLeft(level, p.burst, rate.scale, rate.tol, rate.perStep)
    out.resetMs = stepsToMs(level, rate)
  },
  refund: tokenBucketMethods.refund,
  idleAtMs: tokenBucketMethods.idleAtMs,
}
