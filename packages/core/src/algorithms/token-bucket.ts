import type { Algorithm } from './algorithm.js'
import { stepBucket } from './drain.js'

// State layout: [used, lastMs]. `used` is capacity minus tokens, so the all-zero state is a
// full bucket; it exceeds `burst` only while a reservation (debt) is outstanding.

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
 * Formulas (the Redis scripts mirror them), counted in steps of `1 / scale` units where
 * `scale = windowMs / g`, `perMs = limit / g`, `g = gcd(limit, windowMs)`, so that whole costs
 * keep every number whole: `S = round(used × scale)`, `S' = max(0, S - elapsed × perMs)`,
 * `after = S' + cost × scale`, allowed when `after <= burst × scale + tol`;
 * `waitMs = ceil((after - burst × scale - tol) / perMs)`; `resetMs = ceil((after - tol) / perMs)`;
 * `remaining` = the largest whole `n` with `after + n × scale <= burst × scale + tol`. The state
 * stores `after / scale` (units). `tol` is EPSILON units, at most a quarter step.
 */
export const tokenBucket: Algorithm = {
  name: 'token-bucket',
  canReserve: true,
  stateSize: () => 2,
  ...stepBucket(false),
}
