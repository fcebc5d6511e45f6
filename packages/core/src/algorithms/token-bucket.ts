import type { Algorithm, AlgorithmResult } from './algorithm.js'
import { drainedLevel, takeUnits, writeLevel } from './drain.js'

// State layout: [used, lastMs]. `used` is capacity minus tokens, so the all-zero state is a
// full bucket; it exceeds `burst` only while a reservation (debt) is outstanding.
const USED = 0 // drainedLevel and writeLevel use [level, lastMs] at these two offsets
const LAST = 1

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
 * `resetMs = ceil((after - EPSILON) * windowMs / limit)`; `remaining` = the largest whole `n` with `after + n <= burst + EPSILON`.
 */
export const tokenBucket: Algorithm = {
  name: 'token-bucket',
  canReserve: true,
  stateSize: () => 2,
  consume(state, o, p, cost, nowMs, maxWaitMs, commit, out: AlgorithmResult) {
    const after = takeUnits(drainedLevel(state, o, p, nowMs), cost, p, maxWaitMs, out)
    if (commit && after >= 0) writeLevel(state, o, after, nowMs)
  },
  refund(state, o, p, cost, nowMs) {
    const used = drainedLevel(state, o, p, nowMs)
    writeLevel(state, o, used > cost ? used - cost : 0, nowMs)
  },
  charge(state, o, p, cost, nowMs) {
    writeLevel(state, o, drainedLevel(state, o, p, nowMs) + cost, nowMs)
  },
  idleAtMs(state, o, p) {
    return state[o + LAST]! + (state[o + USED]! * p.windowMs) / p.limit
  },
}
