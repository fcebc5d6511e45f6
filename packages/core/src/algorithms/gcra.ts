import { unitsLeft, type Algorithm, type AlgorithmParams } from './algorithm.js'
import { msToDrain, takeUnits, writeLevel } from './drain.js'

// State layout: [tatOffsetMs, anchorMs]. The theoretical arrival time (TAT) is
// `anchorMs + tatOffsetMs`; it is kept relative to the last update because an absolute TAT
// near epoch milliseconds (~1.7e12) only has ~0.0002 ms of float precision left, which is
// enough to flip "a request costing exactly what is left". The anchor also tells a clock
// that went backwards apart from a TAT in the future. All zeros: TAT 0, i.e. fresh.
const TAT = 0 // writeLevel writes [value, timeMs]: the TAT offset is the value
const ANCHOR = 1

/** Milliseconds of emission time still scheduled ahead of `nowMs` (0 when caught up). */
function aheadAt(state: Float64Array, o: number, nowMs: number): number {
  const anchor = state[o + ANCHOR]!
  // A clock that went backwards is treated as standing still.
  const elapsed = nowMs > anchor ? nowMs - anchor : 0
  const ahead = state[o + TAT]! - elapsed
  return ahead > 0 ? ahead : 0
}

/**
 * The units `aheadMs` of schedule stand for, decided on as the token bucket decides on its
 * balance. In milliseconds, the EPSILON slack of `(burst + EPSILON) × T` is below the float
 * spacing of `burst × T` from a burst of about 2^24, so whole units taken from a full
 * allowance could add up to more than it and a request costing exactly what was left was
 * refused. Units to milliseconds and back is off by a few float steps, also past EPSILON there:
 * a count within that of a whole number is that whole number.
 */
function unitsAhead(aheadMs: number, p: AlgorithmParams): number {
  const units = (aheadMs * p.limit) / p.windowMs
  // The nearest whole number; floor(units + 0.5) would round the sum itself past 2^52.
  const below = Math.floor(units)
  const whole = units - below >= 0.5 ? below + 1 : below
  return Math.abs(units - whole) <= p.burst * WHOLE_TOLERANCE ? whole : units
}

/** Relative rounding of a units → milliseconds → units round trip (a few float steps). */
const WHOLE_TOLERANCE = 2 ** -50

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
 * Formulas: `ahead = max(0, tatOffset - max(0, now - anchor))`, the units it stands for
 * `used = ahead / T`; from there the token bucket's test and times (`after = used + cost`,
 * allowed when `after <= burst + EPSILON`, ...). On commit: `tatOffset = after × T`,
 * `anchor = max(anchor, now)`.
 */
export const gcra: Algorithm = {
  name: 'gcra',
  canReserve: true,
  stateSize: () => 2,
  consume(state, o, p, cost, nowMs, maxWaitMs, commit, out) {
    const after = takeUnits(unitsAhead(aheadAt(state, o, nowMs), p), cost, p, maxWaitMs, out)
    if (after < 0) return
    const tat = (after * p.windowMs) / p.limit
    // What is left is what the next request at this instant reads back from the schedule.
    const next = unitsAhead(tat, p)
    out.remaining = unitsLeft(next, p.burst)
    out.resetMs = msToDrain(next, p)
    if (commit) writeLevel(state, o, tat, nowMs)
  },
  refund(state, o, p, cost, nowMs) {
    const back = (cost * p.windowMs) / p.limit
    const ahead = aheadAt(state, o, nowMs)
    writeLevel(state, o, ahead > back ? ahead - back : 0, nowMs)
  },
  charge(state, o, p, cost, nowMs) {
    writeLevel(state, o, aheadAt(state, o, nowMs) + (cost * p.windowMs) / p.limit, nowMs)
  },
  idleAtMs(state, o) {
    return state[o + ANCHOR]! + state[o + TAT]!
  },
}
