import { EPSILON, pastHorizon, unitsLeft, type Algorithm } from './algorithm.js'

// State layout: [windowStartMs, prevCount, currCount], windows aligned to multiples of
// `windowMs`. All zeros: both counts empty, i.e. fresh, even at nowMs = 0.
const START = 0
const PREV = 1
const CURR = 2

/**
 * How far the stored counts roll to reach the window starting at `start`, the one `nowMs`
 * falls in: 0 (same window, or a clock that went backwards: stay in the stored window; that
 * only weighs the previous window more, never admits more), 1 (current becomes previous) or 2
 * (both expired, or stored past the horizon: the clock stepped back that far, and both are
 * forgotten).
 */
function shiftOf(stored: number, start: number, w: number, nowMs: number): number {
  if (pastHorizon(stored, nowMs)) return 2
  if (start <= stored) return 0
  return start - stored < 2 * w ? 1 : 2
}

/**
 * Record the counts of the window `start`. Two empty counts are written as the all-zero state,
 * forgetting the window exactly when RedisStore deletes the key, so that a clock stepping back
 * later finds a fresh state in both stores.
 */
function write(state: Float64Array, o: number, start: number, prev: number, curr: number): void {
  const held = prev > 0 || curr > 0
  state[o + START] = held ? start : 0
  state[o + PREV] = prev
  state[o + CURR] = curr
}

/** Milliseconds from now until the state is fresh, `elapsed` ms into its window. */
function msUntilFresh(prev: number, curr: number, w: number, elapsed: number): number {
  if (curr > 0) return 2 * w - elapsed
  if (prev > 0) return w - elapsed
  return 0
}

/**
 * Sliding window counter: approximates a sliding window with two fixed-window counters.
 * The estimate at `now` is `prev × (1 - elapsedInWindow / windowMs) + curr`: the previous
 * window's count weighted by how much of it the sliding window still overlaps.
 *
 * Pro: O(1) memory (three numbers) whatever the limit; no 2× boundary burst of the fixed
 * window; smooth refill.
 * Con: an approximation: it assumes the previous window's requests were evenly spread, so
 * it can over- or under-count a real sliding window (it never admits more than `limit`
 * within one aligned window); no reservations (`canReserve` false).
 * Pick it for large limits where a sliding log would cost too much memory, e.g. 1000/min
 * per API key: the usual choice of CDNs and API gateways.
 *
 * Formulas: `estimate = prev × (windowMs - elapsed) / windowMs + curr`; allowed when
 * `estimate + cost <= limit + EPSILON`; `remaining` = the largest whole `n` with `estimate' + n <= limit + EPSILON`, `estimate'` as the next request computes it;
 * refused: with `R = limit + EPSILON - curr - cost >= 0`,
 * `retryAfterMs = ceil(windowMs - R × windowMs / prev - elapsed)`; with `R < 0` the request waits
 * for the next window: `R2 = limit + EPSILON - cost`, `retryAfterMs = windowMs - elapsed` when
 * `curr <= R2`, else `ceil(2 × windowMs - R2 × windowMs / curr - elapsed)`;
 * `resetMs = 2 × windowMs - elapsed` when `curr > 0`, `windowMs - elapsed` when only `prev > 0`.
 */
export const slidingWindowCounter: Algorithm = {
  name: 'sliding-window-counter',
  canReserve: false,
  stateSize: () => 3,
  consume(state, o, p, cost, nowMs, _maxWaitMs, commit, out) {
    const w = p.windowMs
    const stored = state[o + START]!
    const aligned = Math.floor(nowMs / w) * w
    const shift = shiftOf(stored, aligned, w, nowMs)
    const start = shift === 0 ? stored : aligned
    const prev = shift === 0 ? state[o + PREV]! : shift === 1 ? state[o + CURR]! : 0
    const curr = shift === 0 ? state[o + CURR]! : 0
    const elapsed = nowMs > start ? nowMs - start : 0
    const estimate = (prev * (w - elapsed)) / w + curr
    const after = estimate + cost
    out.limit = p.limit
    out.waitMs = 0
    if (after <= p.limit + EPSILON) {
      out.allowed = true
      out.retryAfterMs = 0
      // What the next request estimates: the stored counts, summed as it will sum them.
      out.remaining = unitsLeft((prev * (w - elapsed)) / w + (curr + cost), p.limit)
      out.resetMs = msUntilFresh(prev, curr + cost, w, elapsed)
      if (commit) write(state, o, start, prev, curr + cost)
      return
    }
    out.allowed = false
    out.remaining = unitsLeft(estimate, p.limit)
    out.resetMs = msUntilFresh(prev, curr, w, elapsed)
    const room = p.limit + EPSILON - curr - cost
    if (cost > p.limit + EPSILON) {
      // Can never pass; hint at the time the state is fresh again.
      out.retryAfterMs = Math.max(1, out.resetMs, w - elapsed)
    } else if (room >= 0) {
      // Wait in this window until the previous window's weight has fallen enough.
      out.retryAfterMs = Math.max(1, Math.ceil(w - (room * w) / prev - elapsed))
    } else {
      // Wait for the next window, where this window's count becomes the weighted one.
      const nextRoom = p.limit + EPSILON - cost
      out.retryAfterMs =
        curr <= nextRoom ? w - elapsed : Math.ceil(2 * w - (nextRoom * w) / curr - elapsed)
    }
  },
  refund(state, o, p, cost, nowMs) {
    // Only units of the current window can be given back.
    const w = p.windowMs
    const stored = state[o + START]!
    const aligned = Math.floor(nowMs / w) * w
    const shift = shiftOf(stored, aligned, w, nowMs)
    const curr = shift === 0 ? state[o + CURR]! : 0
    const prev = shift === 0 ? state[o + PREV]! : shift === 1 ? state[o + CURR]! : 0
    write(state, o, shift === 0 ? stored : aligned, prev, curr > cost ? curr - cost : 0)
  },
  idleAtMs(state, o, p, nowMs) {
    const start = state[o + START]!
    // Dated past the horizon: read as fresh (see shiftOf).
    if (pastHorizon(start, nowMs)) return 0
    if (state[o + CURR]! > 0) return start + 2 * p.windowMs
    if (state[o + PREV]! > 0) return start + p.windowMs
    return 0
  },
}
