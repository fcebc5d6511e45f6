/**
 * The longest TTL Floodgate sets on a key: 2^62 ms, about 146 million years. Redis refuses a
 * `PX` or `PEXPIRE` whose expiry (now plus the TTL, in ms) would pass 2^63 - 1, and a TTL that
 * is not a whole number, so a state whose useful life is longer (a penalty of
 * `Number.MAX_SAFE_INTEGER` units, a rule whose burst takes longer to refill than that) keeps
 * its key this long instead of failing the call: no one waits that long.
 */
export const MAX_TTL_MS: number = 2 ** 62

/**
 * A TTL Redis takes: a whole number of milliseconds from 1 to {@link MAX_TTL_MS}.
 *
 * @param ms - The useful life wanted, in ms (any number; NaN or more than the cap gives the cap).
 * @returns The TTL to send.
 */
export function boundedTtlMs(ms: number): number {
  if (!(ms < MAX_TTL_MS)) return MAX_TTL_MS
  return Math.max(1, Math.ceil(ms))
}
