/** Returns the current time in integer milliseconds. Injected wherever time matters. */
export type Clock = () => number

/**
 * Default clock: `Date.now()`. It is the cheapest clock in Node (`performance.now()` costs
 * several times more on the hot path), and the algorithms are safe against its jumps: a step
 * backwards refills nothing (elapsed time is treated as zero) and a step forwards only
 * refills early. The Redis store uses Redis's own clock instead.
 */
export const systemClock: Clock = Date.now
