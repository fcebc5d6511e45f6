import type { Algorithm } from './algorithm.js'
import { stepBucket } from './drain.js'

// State layout: [tatOffsetMs, anchorMs]. The theoretical arrival time (TAT) is
// `anchorMs + tatOffsetMs`; it is kept relative to the last update because an absolute TAT
// near epoch milliseconds (~1.7e12) only has ~0.0002 ms of float precision left, which is
// enough to flip "a request costing exactly what is left". The anchor also tells a clock
// that went backwards apart from a TAT in the future. All zeros: TAT 0, i.e. fresh.
// One millisecond of the TAT offset is `perMs` steps of the token bucket's (see stepBucket).

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
 * Formulas: the schedule ahead is counted in the token bucket's steps (`perMs` per
 * millisecond, see its formulas): `S = round(tatOffset × perMs)`,
 * `S' = max(0, S - max(0, now - anchor) × perMs)`; from there the token bucket's test and
 * times. On commit: `tatOffset = after / perMs`, `anchor = max(anchor, now)`. Deciding in
 * milliseconds instead, a burst past 2^24 refused a request costing exactly what was left.
 */
export const gcra: Algorithm = {
  name: 'gcra',
  canReserve: true,
  stateSize: () => 2,
  ...stepBucket(true),
}
