import {
  EPSILON,
  pastHorizon,
  unitsLeft,
  type Algorithm,
  type AlgorithmParams,
} from './algorithm.js'
import { refusalRetryMs } from './drain.js'

// State layout: [windowStartMs, count]. Windows are aligned to multiples of `windowMs`
// (`floor(now / windowMs) × windowMs`), so the start needs no "unset" marker: a zero count
// means fresh whatever the start says, even at nowMs = 0. `count` above `limit` is a
// reservation that carries into the following windows. The start is also the latest window
// the state has seen, which a clock that went backwards does not leave (unless it went back
// past the horizon: then the window is forgotten).
const START = 0
const COUNT = 1

/**
 * Start of the window `nowMs` falls in: a clock that went backwards stays in the stored
 * window while it holds a count (a count given back to 0 is forgotten with its window), unless
 * the stored window lies past the horizon (see {@link storedCount}).
 */
function windowStart(stored: number, p: AlgorithmParams, nowMs: number): number {
  const start = Math.floor(nowMs / p.windowMs) * p.windowMs
  return start <= stored && !pastHorizon(stored, nowMs) ? stored : start
}

/** The stored count, 0 for a window that starts past the horizon (the clock stepped back). */
function storedCount(state: Float64Array, o: number, nowMs: number): number {
  return pastHorizon(state[o + START]!, nowMs) ? 0 : state[o + COUNT]!
}

/**
 * Record `count` in the window `start`. A count that idleAtMs calls nothing is written as the
 * all-zero state, forgetting the window exactly when RedisStore deletes the key, so that a
 * clock stepping back later finds a fresh state in both stores.
 */
function write(state: Float64Array, o: number, start: number, count: number): void {
  const held = count > EPSILON
  state[o + START] = held ? start : 0
  state[o + COUNT] = held ? count : 0
}

/** The count at the window `start`, after each elapsed window absorbed `limit` units. */
function countAt(stored: number, count: number, start: number, p: AlgorithmParams): number {
  if (count <= 0 || start <= stored) return count > 0 ? count : 0
  const left = count - Math.floor((start - stored) / p.windowMs) * p.limit
  return left > 0 ? left : 0
}

/** Milliseconds from `nowMs` until the window in which a count of `units` has drained. */
function msUntilDrained(units: number, start: number, p: AlgorithmParams, nowMs: number): number {
  if (units <= EPSILON) return 0
  return start + Math.ceil((units - EPSILON) / p.limit) * p.windowMs - nowMs
}

/**
 * Fixed window: a counter per aligned window of `windowMs`; a request passes while the
 * window's count plus its cost stays within `limit`. A reservation lets the count exceed
 * `limit`; the excess carries into the next windows (each elapsed window absorbs `limit`),
 * and the request waits for the first window that has room for it.
 *
 * Pro: the cheapest algorithm there is (two numbers, integer arithmetic), easy to explain
 * ("100 per minute, resets on the minute"), and `resetMs` is the same for every client.
 * Con: bursts at the boundary: up to `2 × limit` can pass within a few milliseconds around
 * a window change; every client's allowance refills at the same instant (thundering herd).
 * Pick it for coarse quotas (per hour, per day) where boundary bursts do not matter.
 *
 * Formulas: `count' = max(0, count - k × limit)` after `k` whole windows; allowed when
 * `count' + cost <= limit + EPSILON`; a refused or reserved request waits until the window
 * `m = ceil((count' + cost - limit - EPSILON) / limit)` windows ahead starts:
 * `waitMs = windowStart + m × windowMs - now`; `resetMs` likewise with
 * `ceil((count - EPSILON) / limit)` windows; `remaining` = the largest whole `n` with `count + n <= limit + EPSILON`.
 */
export const fixedWindow: Algorithm = {
  name: 'fixed-window',
  canReserve: true,
  stateSize: () => 2,
  consume(state, o, p, cost, nowMs, maxWaitMs, commit, out) {
    const stored = state[o + START]!
    const count0 = storedCount(state, o, nowMs)
    const start = windowStart(stored, p, nowMs)
    const count = countAt(stored, count0, start, p)
    const after = count + cost
    out.limit = p.limit
    if (after <= p.limit + EPSILON) {
      out.allowed = true
      out.waitMs = 0
      out.retryAfterMs = 0
    } else {
      const waitMs = msUntilDrained(after - p.limit, start, p, nowMs)
      const fits = cost <= p.limit + EPSILON
      if (maxWaitMs > 0 && fits && waitMs <= maxWaitMs) {
        out.allowed = true
        out.waitMs = waitMs
        out.retryAfterMs = 0
      } else {
        out.allowed = false
        out.waitMs = 0
        out.retryAfterMs = refusalRetryMs(waitMs, maxWaitMs, fits)
        out.remaining = unitsLeft(count, p.limit)
        out.resetMs = msUntilDrained(count, start, p, nowMs)
        return
      }
    }
    out.remaining = unitsLeft(after, p.limit)
    out.resetMs = msUntilDrained(after, start, p, nowMs)
    if (commit) write(state, o, start, after)
  },
  refund(state, o, p, cost, nowMs) {
    const stored = state[o + START]!
    const count0 = storedCount(state, o, nowMs)
    const start = windowStart(stored, p, nowMs)
    const count = countAt(stored, count0, start, p)
    write(state, o, start, count > cost ? count - cost : 0)
  },
  idleAtMs(state, o, p, nowMs) {
    const count = state[o + COUNT]!
    const start = state[o + START]!
    // A window dated past the horizon reads as fresh (see storedCount).
    if (count <= EPSILON || pastHorizon(start, nowMs)) return 0
    return start + Math.ceil((count - EPSILON) / p.limit) * p.windowMs
  },
}
