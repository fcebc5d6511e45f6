/** Returns the current time in integer milliseconds. Injected wherever time matters. */
export type Clock = () => number

/**
 * `Date.now()` read on every call. The algorithms are safe against its jumps: a step
 * backwards refills nothing (elapsed time counts as zero) and a step forwards only refills
 * early.
 */
export const systemClock: Clock = Date.now

let cachedNow = Date.now()
let ticker: ReturnType<typeof setInterval> | undefined

/**
 * The limiter's default clock: `Date.now()` refreshed once a millisecond by one shared,
 * unref'd interval, so reading it costs a variable load instead of a ~50 ns system call on
 * every request. It lags real time by at most the time since the event loop last ran its
 * timers; a lagging clock only makes decisions slightly stricter (less refill, later window
 * ends). The interval starts with the first limiter that uses this clock.
 */
export const coarseClock: Clock = () => cachedNow

/** Start the shared interval behind {@link coarseClock} (idempotent). */
export function startCoarseClock(): void {
  if (ticker) return
  cachedNow = Date.now()
  ticker = setInterval(() => {
    cachedNow = Date.now()
  }, 1)
  ticker.unref()
}
