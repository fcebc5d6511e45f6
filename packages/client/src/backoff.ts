/** How a retry delay is spread around the exponential ceiling. */
export type Jitter =
  /** `random(0, ceiling)`: clients that failed together retry at scattered times (default). */
  | 'full'
  /** Exactly the ceiling: every client that failed together retries together (lockstep). */
  | 'none'

/** Inputs of {@link backoffDelayMs}. */
export interface BackoffOptions {
  /**
   * Ceiling of the first retry's delay, doubled for each further retry.
   * @default 100
   */
  readonly baseMs?: number | undefined
  /**
   * Largest ceiling, however many retries came before.
   * @default 10_000
   */
  readonly capMs?: number | undefined
  /**
   * Spread of the delay under the ceiling.
   * @default 'full'
   */
  readonly jitter?: Jitter | undefined
  /**
   * A source of uniform numbers in `[0, 1)`; inject a seeded one to make delays reproducible.
   * @default Math.random
   */
  readonly random?: (() => number) | undefined
}

/** Default ceiling of the first retry's delay. */
export const DEFAULT_BASE_MS = 100
/** Default largest ceiling of one delay. */
export const DEFAULT_CAP_MS = 10_000

/**
 * The exponential ceiling for a retry: `min(capMs, baseMs · 2^retry)`.
 *
 * @param retry - 0 for the first retry, 1 for the second, …
 * @param baseMs - ceiling of the first retry
 * @param capMs - largest ceiling
 * @returns the ceiling in milliseconds
 */
export function backoffCeilingMs(retry: number, baseMs: number, capMs: number): number {
  // A negative or NaN retry is treated as the first. 2 ** 1100 is Infinity, which Math.min
  // handles, but not times a base of 0 (NaN): a base of 0 is a ceiling of 0 at every retry.
  // Likewise a NaN or negative base or cap is a ceiling of 0, never a NaN delay.
  if (!(baseMs > 0)) return 0
  const ceiling = Math.min(capMs, baseMs * 2 ** (retry > 0 ? retry : 0))
  return ceiling > 0 ? ceiling : 0
}

/**
 * The delay before a retry, exponential backoff with full jitter:
 * `random(0, min(capMs, baseMs · 2^retry))`. Full jitter spreads a crowd of clients that
 * failed at the same moment over the whole interval, so they do not hit the server again in
 * one spike (see the AWS Architecture Blog, "Exponential Backoff And Jitter").
 *
 * @param retry - 0 for the first retry, 1 for the second, …
 * @param options - base, cap, jitter and the random source
 * @returns the delay in milliseconds (a float, never negative)
 * @example
 * ```ts
 * backoffDelayMs(3, { baseMs: 100, capMs: 5000 }) // somewhere in [0, 800)
 * ```
 */
export function backoffDelayMs(retry: number, options: BackoffOptions = {}): number {
  const ceiling = backoffCeilingMs(
    retry,
    options.baseMs ?? DEFAULT_BASE_MS,
    options.capMs ?? DEFAULT_CAP_MS,
  )
  if (options.jitter === 'none') return ceiling
  const random = options.random ?? Math.random
  // Clamp a misbehaving random source (negative, above 1, NaN) rather than produce a
  // negative, oversized or NaN delay.
  const x = random()
  return (x > 0 ? (x < 1 ? x : 1) : 0) * ceiling
}
