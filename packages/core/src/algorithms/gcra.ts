import { EPSILON, unitsLeft, type Algorithm, type AlgorithmParams } from './algorithm.js'
import { refusalRetryMs } from './drain.js'

// State layout: [tatOffsetMs, anchorMs]. The theoretical arrival time (TAT) is
// `anchorMs + tatOffsetMs`; it is kept relative to the last update because an absolute TAT
// near epoch milliseconds (~1.7e12) only has ~0.0002 ms of float precision left, which is
// enough to flip "a request costing exactly what is left". The anchor also tells a clock
// that went backwards apart from a TAT in the future. All zeros: TAT 0, i.e. fresh.
const TAT = 0
const ANCHOR = 1

/** Milliseconds of emission time still scheduled ahead of `nowMs` (0 when caught up). */
function aheadAt(state: Float64Array, o: number, nowMs: number): number {
  const anchor = state[o + ANCHOR]!
  // A clock that went backwards is treated as standing still.
  const elapsed = nowMs > anchor ? nowMs - anchor : 0
  const ahead = state[o + TAT]! - elapsed
  return ahead > 0 ? ahead : 0
}

/** Milliseconds for `ahead` to run out, with the EPSILON slack of the admission test. */
function msFor(aheadMs: number, p: AlgorithmParams): number {
  const slack = (EPSILON * p.windowMs) / p.limit
  return aheadMs > slack ? Math.ceil(aheadMs - slack) : 0
}

/**
 * GCRA (generic cell rate algorithm): each unit is scheduled one emission interval
 * `T = windowMs / limit` after the previous one; a request passes when its theoretical
 * arrival time is at most `burst × T` ahead of now. It admits exactly what a token bucket of
 * capacity `burst` refilled at `limit` per `windowMs` admits, but it is described by a
 * single instant (the TAT) instead of a balance and a timestamp.
 *
 * Pro: exact rate with a configurable burst tolerance; O(1) memory; reservations (queueing)
 * are natural: a queued request simply pushes the TAT further out.
 * Con: same burst behaviour as a token bucket (a full allowance passes at once); the TAT is
 * harder to explain to users than "tokens left".
 * Pick it when you think in "one request every T ms, with a tolerance", e.g. to mirror an
 * upstream that is specified as a GCRA, or when porting from a GCRA-based limiter.
 *
 * Formulas: `ahead = max(0, tatOffset - max(0, now - anchor))`, `newAhead = ahead + cost × T`;
 * allowed when `newAhead <= (burst + EPSILON) × T`; `waitMs = ceil(newAhead - (burst + EPSILON) × T)`;
 * `resetMs = ceil(newAhead - EPSILON × T)`; `remaining` = the largest whole `n` with `newAhead + n × T <= (burst + EPSILON) × T`.
 * On commit: `tatOffset = newAhead`, `anchor = max(anchor, now)`.
 */
export const gcra: Algorithm = {
  name: 'gcra',
  canReserve: true,
  stateSize: () => 2,
  consume(state, o, p, cost, nowMs, maxWaitMs, commit, out) {
    const t = p.windowMs / p.limit
    const ahead = aheadAt(state, o, nowMs)
    const newAhead = ahead + cost * t
    const tolerance = (p.burst + EPSILON) * t
    out.limit = p.burst
    if (newAhead <= tolerance) {
      out.allowed = true
      out.waitMs = 0
      out.retryAfterMs = 0
    } else {
      const waitMs = Math.ceil(newAhead - tolerance)
      const fits = cost <= p.burst + EPSILON
      if (maxWaitMs > 0 && fits && waitMs <= maxWaitMs) {
        out.allowed = true
        out.waitMs = waitMs
        out.retryAfterMs = 0
      } else {
        out.allowed = false
        out.waitMs = 0
        out.retryAfterMs = refusalRetryMs(waitMs, maxWaitMs, fits)
        out.remaining = unitsLeft(ahead, p.burst, t)
        out.resetMs = msFor(ahead, p)
        return
      }
    }
    // The next request's test, `newAhead + cost × t <= tolerance`, decides what is left.
    out.remaining = unitsLeft(newAhead, p.burst, t)
    out.resetMs = msFor(newAhead, p)
    if (commit) {
      state[o + TAT] = newAhead
      state[o + ANCHOR] = Math.max(state[o + ANCHOR]!, nowMs)
    }
  },
  refund(state, o, p, cost, nowMs) {
    const back = (cost * p.windowMs) / p.limit
    const ahead = aheadAt(state, o, nowMs)
    state[o + TAT] = ahead > back ? ahead - back : 0
    state[o + ANCHOR] = Math.max(state[o + ANCHOR]!, nowMs)
  },
  charge(state, o, p, cost, nowMs) {
    state[o + TAT] = aheadAt(state, o, nowMs) + (cost * p.windowMs) / p.limit
    state[o + ANCHOR] = Math.max(state[o + ANCHOR]!, nowMs)
  },
  idleAtMs(state, o) {
    return state[o + ANCHOR]! + state[o + TAT]!
  },
}
