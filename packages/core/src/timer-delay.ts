/**
 * The longest delay Node's `setTimeout` and `setInterval` keep: a longer one (2^31 ms or more)
 * fires after 1 ms instead, with a `TimeoutOverflowWarning`. Every duration a rule or an option
 * takes is at most this, but a delay made of two (a wait and its grace) can pass it.
 */
export const MAX_TIMER_MS: number = 2 ** 31 - 1

/**
 * A delay for `setTimeout`: `ms`, but never past {@link MAX_TIMER_MS}, where the timer would
 * fire at once. Not below 0.
 */
export function timerDelay(ms: number): number {
  return ms >= MAX_TIMER_MS ? MAX_TIMER_MS : ms > 0 ? ms : 0
}
