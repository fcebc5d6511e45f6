/** Returns the current time in integer milliseconds. Injected wherever time matters. */
export type Clock = () => number

/**
 * The default clock: `Date.now()`. The algorithms are safe against its jumps: a step
 * backwards refills nothing (elapsed time counts as zero) and a step forwards only refills
 * early. The Redis store uses Redis's own clock instead.
 */
export const systemClock: Clock = Date.now
