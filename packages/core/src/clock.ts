/** Returns the current time in integer milliseconds. Injected wherever time matters. */
export type Clock = () => number

/**
 * `Date.now()` on every call: the limiter's default clock. The algorithms are safe against its jumps: a step backwards
 * refills nothing (elapsed time counts as zero) and a step forwards only refills early. The
 * Redis store uses Redis's own clock instead.
 */
export const systemClock: Clock = () => Date.now()

let turnNow = -1
const forgetTurnNow = (): void => {
  turnNow = -1
}

/**
 * `Date.now()` read once per event-loop turn and reused by every call in the same turn, then
 * forgotten by a `setImmediate`: for code that decides many requests in one synchronous loop
 * (a batch job calling `limit()`), where a `Date.now()` per call costs about as much as the
 * whole store operation. Not the default: an HTTP server usually decides one request per turn,
 * and there the `setImmediate` costs more than the `Date.now()` it saves. An idle process
 * pays nothing: no timer runs unless the clock was read.
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
