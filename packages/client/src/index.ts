/**
 * @module @floodgate/client
 *
 * A fetch wrapper that retries refused requests with exponential backoff and full jitter,
 * honouring the server's `Retry-After` and `RateLimit` headers, with optional client-side
 * adaptive throttling; and a pacer that makes callers wait their turn at a steady rate.
 */
export {
  createAdaptiveThrottle,
  DEFAULT_THROTTLE_K,
  DEFAULT_THROTTLE_WINDOW_MS,
  LocallyRefusedResponse,
  refusalProbability,
} from './adaptive-throttle.js'
export type {
  AdaptiveThrottle,
  AdaptiveThrottleCounts,
  AdaptiveThrottleOptions,
} from './adaptive-throttle.js'
export { backoffCeilingMs, backoffDelayMs, DEFAULT_BASE_MS, DEFAULT_CAP_MS } from './backoff.js'
export type { BackoffOptions, Jitter } from './backoff.js'
export { createPacer } from './pacer.js'
export type { AcquireOptions, Pacer, PacerOptions, TryAcquireOptions } from './pacer.js'
export { parseRateLimit, parseRetryAfter, serverWaitMs } from './server-wait.js'
export type { HeaderReader } from './server-wait.js'
export { sleep } from './sleep.js'
export type { Sleep } from './sleep.js'
export { fetchWithRetry, withRetry } from './with-retry.js'
export type { FetchInput, FetchLike, RetryEvent, RetryOptions } from './with-retry.js'
