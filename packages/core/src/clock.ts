/** Returns the current time in integer milliseconds. Injected wherever time matters. */
export type Clock = () => number

const origin = performance.timeOrigin

/**
 * Default clock: epoch milliseconds derived from the monotonic `performance.now()`, so a wall
 * clock stepped backwards or forwards (NTP, a VM resume) cannot stretch or reset windows.
 */
export const monotonicClock: Clock = () => Math.floor(origin + performance.now())
