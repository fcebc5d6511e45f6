/**
 * The contract every limiting algorithm implements.
 *
 * An algorithm is a set of pure functions over a small numeric state that the caller owns
 * (a slice of a `Float64Array`), so that MemoryStore can pack millions of keys into flat
 * arrays and the Redis Lua scripts can mirror the same arithmetic. Time is always passed in
 * as integer milliseconds (`nowMs`), never read inside.
 *
 * An all-zero state is always the fresh state (nothing consumed), so a store never needs
 * an explicit "init" step.
 */

/** Names of the algorithms core ships. */
export type AlgorithmName =
  | 'token-bucket'
  | 'gcra'
  | 'fixed-window'
  | 'sliding-window-log'
  | 'sliding-window-counter'
  | 'leaky-bucket'
  | 'concurrency'

/** Numeric parameters of one rule, resolved once when the rule is compiled. */
export interface AlgorithmParams {
  /** Requests (or cost units) allowed per `windowMs`; the refill amount for buckets; slots for concurrency. */
  readonly limit: number
  /** Length of the window, or the time a bucket takes to refill `limit` tokens. */
  readonly windowMs: number
  /** Bucket capacity (token bucket, GCRA, leaky bucket). Equals `limit` unless the rule sets `burst`. */
  readonly burst: number
}

/**
 * Outcome of one consume call. Stores reuse one instance per call site, so algorithms write
 * every field on every call.
 */
export interface AlgorithmResult {
  /** True when the request is admitted, now or (when `waitMs > 0`) after a reservation. */
  allowed: boolean
  /** With a reservation (queueing): how long the request must wait before it proceeds. 0 otherwise. */
  waitMs: number
  /** The rule's limit as advertised to clients (capacity for buckets). */
  limit: number
  /** Whole units left after this call, never negative. */
  remaining: number
  /** Milliseconds until the state is back to its fresh, fully available value. */
  resetMs: number
  /** When refused: milliseconds until the same request could pass. 0 when allowed. */
  retryAfterMs: number
  /**
   * Set by a store that names the concurrency slot an admission took (RedisStore): pass it
   * back as the `lease` of the refund entry when the slot is released, so that a release after the
   * state was lost (evicted, deleted, reset) frees nothing instead of a slot a newer request
   * holds. Undefined otherwise.
   */
  lease?: number
  /**
   * Set by a store that had no room for this key's state (MemoryStore full at `maxKeys`): the
   * refusal is the store's, not the rule's, and nothing was recorded, so the limiter does not
   * count it toward a ban. Undefined otherwise.
   */
  storeFull?: boolean | undefined
}

/**
 * Turn an admission that would wait (a reservation) into the refusal of a full queue: the
 * request may come back once its wait is over. Admissions without a wait are left as they are.
 */
export function refuseReservation(out: AlgorithmResult): void {
  if (!out.allowed || out.waitMs <= 0) return
  out.allowed = false
  out.retryAfterMs = Math.max(1, out.waitMs)
  out.waitMs = 0
}

/** A fresh result object, for callers that need their own. */
export function newResult(): AlgorithmResult {
  return { allowed: false, waitMs: 0, limit: 0, remaining: 0, resetMs: 0, retryAfterMs: 0 }
}

/** The functions one algorithm provides. All take the state as `(state, offset)`. */
export interface Algorithm {
  readonly name: AlgorithmName
  /** Whether a refused request can reserve capacity in advance (needed for the `queue` action). */
  readonly canReserve: boolean
  /** Number of `Float64Array` slots one key's state needs under these params. */
  stateSize(params: AlgorithmParams): number
  /**
   * Decide one request of `cost` units at `nowMs`.
   *
   * With `commit` false the state is left untouched (a dry run, used to decide several rules
   * all-or-nothing); with `commit` true an admitted request is recorded. A refused request
   * never changes the meaning of the state.
   *
   * `maxWaitMs > 0` lets a request that would be refused reserve capacity instead, when it
   * could proceed within `maxWaitMs`: it is then `allowed` with `waitMs` set, and the state
   * goes into debt (algorithms with `canReserve` only).
   */
  consume(
    state: Float64Array,
    offset: number,
    params: AlgorithmParams,
    cost: number,
    nowMs: number,
    maxWaitMs: number,
    commit: boolean,
    out: AlgorithmResult,
  ): void
  /** Give back `cost` units: a concurrency slot at release, or a reservation a queued client abandoned. */
  refund(
    state: Float64Array,
    offset: number,
    params: AlgorithmParams,
    cost: number,
    nowMs: number,
  ): void
  /**
   * Record `cost` units unconditionally, even past the capacity: the state goes into debt and
   * later requests are refused until it is paid back. Used to charge units another host
   * admitted (SyncedStore in `@floodgate/redis`). Only algorithms whose state is a level that
   * drains at `limit` per `windowMs` (token bucket, GCRA) have it; for the others, debt has
   * no meaning (a window forgets its count when it ends).
   */
  charge?(
    state: Float64Array,
    offset: number,
    params: AlgorithmParams,
    cost: number,
    nowMs: number,
  ): void
  /** Epoch ms at which the state becomes equal to the fresh state again (used for eviction and TTLs). */
  idleAtMs(state: Float64Array, offset: number, params: AlgorithmParams, nowMs: number): number
}

/**
 * Tolerance for comparisons of fractional token counts: refill arithmetic such as
 * `elapsed * limit / windowMs` may land a hair off a whole number, and a request costing
 * exactly what is left must still pass. Lua scripts use the same constant.
 */
export const EPSILON = 1e-9

/**
 * How far after `nowMs` a state's time may lie and still be read. Every time an algorithm
 * stores (a bucket's last update, a window's start, a log's entries) is a clock reading it was
 * given, so a later one means the clock has stepped back since (an NTP step, a VM restored, a
 * Redis host whose clock was corrected) or the state is not Floodgate's. Within this margin the
 * state stands still at its own time, so readings that disagree a little admit nothing extra;
 * past it the state is forgotten, as an evicted key is, instead of holding its client out
 * until the clock catches up with it, which may be hours or years. Lua scripts use the same
 * constant.
 */
export const STATE_TIME_HORIZON_MS = 1000

/** Whether a state's time `timeMs` lies past {@link STATE_TIME_HORIZON_MS} after `nowMs`. */
export function pastHorizon(timeMs: number, nowMs: number): boolean {
  return timeMs - nowMs > STATE_TIME_HORIZON_MS
}

/**
 * Whole units a request may still take when `used` units of `capacity` are taken: the largest
 * `n >= 0` with `used + n × step <= capacity × step + tol`, which is the admission test itself
 * (`step` is 1, or the bucket algorithms' steps per unit, their test being counted in steps),
 * so a request of `remaining` units passes and one of `remaining + 1` does not. The estimate
 * `floor((capacity × step + tol - used) / step)` alone can be one off: once the numbers are
 * large (a limit of a billion) or `used` carries float noise, the subtraction rounds
 * differently from the test's addition. It is confirmed by the test and, when off, moved by at
 * most two steps each way. Runs on every decision: no closure. Lua scripts mirror it.
 *
 * @param used - what is taken, as the next request's admission test will see it
 * @param capacity - the most units that can be taken
 * @param step - what one unit adds to `used` (default 1)
 * @param tol - the admission test's slack, in the unit of `used` (default EPSILON)
 * @param perStep - `1 / step` (rounded), given with any `step` other than 1
 */
export function unitsLeft(
  used: number,
  capacity: number,
  step = 1,
  tol: number = EPSILON,
  perStep = 1,
): number {
  const room = capacity * step + tol
  // A product, not a quotient, for the estimate: it is confirmed below either way.
  let n = Math.floor((room - used) * perStep)
  if (!(n > 0)) n = 0
  if (used + (n + 1) * step > room && (n === 0 || used + n * step <= room)) return n
  for (let i = 0; i < 2 && n > 0 && used + n * step > room; i++) n--
  for (let i = 0; i < 2 && used + (n + 1) * step <= room; i++) n++
  return n > 0 && used + n * step <= room ? n : 0
}
