import { EPSILON, pastHorizon, type Algorithm, type AlgorithmParams } from './algorithm.js'

// State layout: [count, head, t0 … t(limit-1)]: a ring of `limit` timestamps, oldest at
// `head`, `count` of them valid, in chronological order. All zeros: an empty log (the count
// slot is what tells a timestamp of 0 from "no entry"). The ring never needs more than
// `limit` entries because at most `limit` units are ever inside one window.
const COUNT = 0
const HEAD = 1
const RING = 2

/** Ring capacity for these params: one slot per unit of the limit. */
function ringSize(p: AlgorithmParams): number {
  return Math.max(1, Math.ceil(p.limit - EPSILON))
}

/** Timestamp of the `i`-th oldest entry (0-based). */
function entry(state: Float64Array, o: number, size: number, head: number, i: number): number {
  // head < size and i < size, so one subtraction replaces a (slower) modulo.
  const at = head + i
  return state[o + RING + (at < size ? at : at - size)]!
}

/** Index (0 = oldest) of the first entry newer than `cutoff`; `count` when there is none. */
function firstAfter(
  state: Float64Array,
  o: number,
  size: number,
  head: number,
  count: number,
  cutoff: number,
): number {
  // Entries are sorted, so a binary search finds the window's oldest entry.
  let lo = 0
  let hi = count
  while (lo < hi) {
    const mid = (lo + hi) >>> 1
    if (entry(state, o, size, head, mid) > cutoff) hi = mid
    else lo = mid + 1
  }
  return lo
}

/**
 * Empty the log of a write that leaves no entry inside the window: RedisStore deletes such a
 * key, and a clock stepping back later must find a fresh state in both stores, not entries
 * that are back in its window.
 */
/** When the log is empty again: its newest entry plus the window; 0 when it holds none. */
function logIdleAt(state: Float64Array, o: number, p: AlgorithmParams): number {
  const count = state[o + COUNT]!
  if (count <= 0) return 0
  return entry(state, o, ringSize(p), state[o + HEAD]!, count - 1) + p.windowMs
}

function forget(state: Float64Array, o: number): void {
  state[o + COUNT] = 0
  state[o + HEAD] = 0
}

/**
 * Sliding window log: exact "no more than `limit` units in any window of `windowMs`". Each
 * admitted unit is logged with its timestamp in a ring of `limit` slots; a request passes
 * when the units logged in `(now - windowMs, now]` plus its cost stay within `limit`. A cost
 * of `c` logs `c` entries (costs are rounded up to whole units; a cost above `limit` never
 * passes).
 *
 * Pro: exact; no boundary burst (with limit 10/s, ten requests at 0.90 … 0.99 s pass and
 * requests at 1.00 and 1.01 s are refused, where a fixed window would admit them).
 * Con: memory grows with the limit: `(limit + 2) × 8` bytes per key (10 000/hour costs
 * 80 kB per key), so keep it for small limits. No reservations (`canReserve` false):
 * use a token bucket, GCRA or leaky bucket for queueing.
 * Pick it for small, strict limits where fairness at the boundary matters: logins,
 * password resets, OTP and signup endpoints.
 *
 * Formulas: `now' = max(now, newest entry)`; `n` = entries with `t > now' - windowMs`;
 * allowed when `n + cost <= limit`; refused: `retryAfterMs = t[k] + windowMs - now'` where
 * `t[k]` is the `(n + cost - limit)`-th oldest entry in the window;
 * `resetMs = newest + windowMs - now'` (0 when empty); `remaining = limit - n - cost`.
 */
export const slidingWindowLog: Algorithm = {
  name: 'sliding-window-log',
  canReserve: false,
  stateSize: (p) => ringSize(p) + RING,
  consume(state, o, p, cost, nowMs, _maxWaitMs, commit, out) {
    const size = ringSize(p)
    const head = state[o + HEAD]!
    const stored = state[o + COUNT]!
    const newest = stored > 0 ? entry(state, o, size, head, stored - 1) : nowMs
    // A clock that went backwards stands still at the newest entry (keeps the ring sorted);
    // one that went back past the horizon finds the log forgotten.
    const count = pastHorizon(newest, nowMs) ? 0 : stored
    const last = count > 0 ? newest : nowMs
    const now = nowMs > last ? nowMs : last
    const first = firstAfter(state, o, size, head, count, now - p.windowMs)
    const inWindow = count - first
    const units = cost > EPSILON ? Math.ceil(cost - EPSILON) : 0
    const after = inWindow + units
    out.limit = size
    out.waitMs = 0
    if (after <= size) {
      out.allowed = true
      out.retryAfterMs = 0
      out.remaining = size - after
      out.resetMs = units > 0 ? p.windowMs : inWindow > 0 ? last + p.windowMs - now : 0
      if (commit && units === 0 && inWindow === 0) forget(state, o)
      if (commit && units > 0) {
        // Drop the expired entries, then append one entry per unit at `now`.
        const start = head + first < size ? head + first : head + first - size
        for (let i = 0; i < units; i++) {
          const at = start + inWindow + i
          state[o + RING + (at < size ? at : at - size)] = now
        }
        state[o + HEAD] = start
        state[o + COUNT] = after
      }
      return
    }
    out.allowed = false
    out.remaining = size - inWindow
    out.resetMs = inWindow > 0 ? last + p.windowMs - now : 0
    if (units > size) {
      // Can never pass; hint at the time the log is empty again.
      out.retryAfterMs = inWindow > 0 ? out.resetMs : p.windowMs
    } else {
      // The request fits once the (after - limit) oldest entries in the window have left it.
      const leaving = entry(state, o, size, head, first + after - size - 1)
      out.retryAfterMs = leaving + p.windowMs - now
    }
  },
  refund(state, o, p, cost, nowMs) {
    // Forget the newest entries (there are no reservations to cancel, only slots to return).
    const count = state[o + COUNT]!
    const units = cost > EPSILON ? Math.ceil(cost - EPSILON) : 0
    state[o + COUNT] = count > units ? count - units : 0
    // The log's own idle time, as RedisStore's script keeps a key (not the horizon's view).
    if (logIdleAt(state, o, p) <= nowMs) forget(state, o)
  },
  idleAtMs(state, o, p, nowMs) {
    const idleAt = logIdleAt(state, o, p)
    // A newest entry past the horizon: the log reads as forgotten (see consume).
    return idleAt > 0 && pastHorizon(idleAt - p.windowMs, nowMs) ? 0 : idleAt
  },
}
