/** Returns the current time in integer milliseconds. Injected wherever time matters. */
export type Clock = () => number

/**
 * `Date.now()` on every call. The algorithms are safe against its jumps: a step backwards
 * refills nothing (elapsed time counts as zero) and a step forwards only refills early. The
 * Redis store uses Redis's own clock instead.
 */
export const systemClock: Clock = () => Date.now()

let turnNow = -1
let readsThisTurn = 0
// Calls answered with a fresh Date.now() before the next turn that shares one again.
let directLeft = 0
/** Calls answered directly after a turn that read the clock once, before sharing is tried again. */
export const TURN_CLOCK_DIRECT_CALLS = 256

const forgetTurnNow = (): void => {
  // A turn that read the clock once gained nothing from sharing it and paid for the
  // setImmediate: answer the next calls with Date.now() itself, then try sharing again.
  if (readsThisTurn <= 1) directLeft = TURN_CLOCK_DIRECT_CALLS
  turnNow = -1
  readsThisTurn = 0
}

/**
 * The limiter's default clock: `Date.now()` read once per event-loop turn and reused by every
 * call in the same turn, then forgotten by a `setImmediate`. A busy server decides many
 * requests per turn, and a `Date.now()` per call costs about as much as the whole
 * store operation. When a turn reads the clock only once (a quiet server: one request per
 * turn), sharing saves nothing and the `setImmediate` costs more than the `Date.now()`, so the
 * next 256 calls read `Date.now()` directly before a turn shares its reading again. An idle
 * server pays nothing: no timer runs unless the clock was read.
 *
 * Within one turn that shares its reading, time stands still: the checks a long synchronous
 * loop makes all see the turn's first reading, so nothing refills during the loop. That errs
 * on the strict side (a bucket refills late, never early). The reading cannot age while the
 * process waits for I/O: a pending `setImmediate` keeps the event loop's poll phase from
 * blocking, so it is at most as old as the callbacks run since. Pass `systemClock` for a
 * fresh reading every call.
 */
export const turnClock: Clock = () => {
  if (turnNow >= 0) {
    readsThisTurn++
    return turnNow
  }
  if (directLeft > 0) {
    directLeft--
    return Date.now()
  }
  turnNow = Date.now()
  readsThisTurn = 1
  setImmediate(forgetTurnNow)
  return turnNow
}
