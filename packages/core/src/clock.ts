/** Returns the current time in integer milliseconds. Injected wherever time matters. */
export type Clock = () => number

/**
 * `Date.now()` on every call. The algorithms are safe against its jumps: a step backwards
 * refills nothing (elapsed time counts as zero) and a step forwards only refills early. The
 * Redis store uses Redis's own clock instead.
 */
export const systemClock: Clock = () => Date.now()

let turnNow = -1
const forgetTurnNow = (): void => {
  turnNow = -1
}

/**
 * The limiter's default clock: `Date.now()` read once per event-loop turn and reused by every
 * call in the same turn, then forgotten by a `setImmediate`. A busy server decides many
 * requests per turn, and a `Date.now()` per call costs about as much as the whole
 * store operation. An idle server pays nothing: no timer runs unless the clock was read.
 *
 * Within one turn, time stands still: the checks a long synchronous loop makes all see the
 * turn's first reading, so nothing refills during the loop. That errs on the strict side
 * (a bucket refills late, never early). The reading cannot age while the process waits for
 * I/O: a pending `setImmediate` keeps the event loop's poll phase from blocking, so it is at
 * most as old as the callbacks run since. Pass `systemClock` for a fresh reading every call.
 */
export const turnClock: Clock = () => {
  if (turnNow >= 0) return turnNow
  turnNow = Date.now()
  setImmediate(forgetTurnNow)
  return turnNow
}
