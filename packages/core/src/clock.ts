/** Returns the current time in integer milliseconds. Injected wherever time matters. */
export type Clock = () => number

/**
 * `Date.now()` on every call. The algorithms are safe against its jumps: a step backwards
 * refills nothing (elapsed time counts as zero), one of more than `STATE_TIME_HORIZON_MS`
 * forgets the states dated after it instead of holding their clients out, and a step forwards
 * only refills early. The Redis store uses Redis's own clock instead.
 */
export const systemClock: Clock = () => Date.now()

let turnNow = -1
let readsThisTurn = 0
// Calls answered with a fresh Date.now() before the next turn that shares one again.
let directLeft = 0
/** Calls answered directly after a turn that read the clock too few times to share it. */
export const TURN_CLOCK_DIRECT_CALLS = 256
/**
 * Reads a turn must make for sharing one to pay: a setImmediate with its run costs about 1,200
 * instructions, a Date.now() about 85 (callgrind, Node 20: 40,000 awaited turns with and
 * without each).
 */
export const TURN_CLOCK_SHARE_READS = 16

const forgetTurnNow = (): void => {
  // A turn that read the clock a few times gained less from sharing it than the setImmediate
  // cost: answer the next calls with Date.now() itself, then try sharing again.
  if (readsThisTurn < TURN_CLOCK_SHARE_READS) directLeft = TURN_CLOCK_DIRECT_CALLS
  turnNow = -1
  readsThisTurn = 0
}

/**
 * The limiter's default clock: `Date.now()` read once per event-loop turn and reused by every
 * call in the same turn, then forgotten by a `setImmediate`. A busy server decides many
 * requests per turn, and a `Date.now()` per call costs about as much as the whole
 * store operation. When a turn reads the clock fewer than 16 times (a server that is not
 * busy: a request or a few per turn), the `setImmediate` costs more than the `Date.now()`
 * calls it saves, so the next 256 calls read `Date.now()` directly before a turn shares its
 * reading again. An idle server pays nothing: no timer runs unless the clock was read.
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
