import { FloodgateError } from './errors.js'
import { formatValue } from './rules/format-value.js'

const UNIT_MS = { ms: 1n, s: 1000n, m: 60_000n, h: 3_600_000n, d: 86_400_000n } as const

// Digits, an optional fraction, then a unit. No exponent, sign or spaces: a duration in a
// rules file is written by hand and an odd spelling is more likely a typo than intent.
const DURATION = /^(\d{1,15})(?:\.(\d{1,9}))?(ms|s|m|h|d)$/

/**
 * Converts a duration to whole milliseconds, or returns `undefined` when it is not one.
 * Shared by {@link parseDuration} and the rule schema, which reports its own message.
 */
export function durationMs(input: unknown): number | undefined {
  if (typeof input === 'number') {
    return Number.isSafeInteger(input) && input >= 0 ? input : undefined
  }
  if (typeof input !== 'string') return undefined
  const m = DURATION.exec(input)
  if (!m) return undefined
  const unit = UNIT_MS[m[3] as keyof typeof UNIT_MS]
  const frac = m[2] ?? ''
  // Exact decimal arithmetic: 1.1 * 1000 is 1100.0000000000002 in floating point.
  const scale = 10n ** BigInt(frac.length)
  const scaled = (BigInt(m[1]!) * scale + BigInt(frac || '0')) * unit
  if (scaled % scale !== 0n) return undefined
  const ms = scaled / scale
  return ms <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(ms) : undefined
}

/**
 * Parses a duration into integer milliseconds.
 *
 * Accepts a non-negative integer (already milliseconds) or a string made of a number and a
 * unit: `'500ms'`, `'10s'`, `'1m'`, `'1h'`, `'1d'`. A fraction is allowed when it comes to
 * whole milliseconds (`'1.5s'` is 1500; `'0.0001s'` is refused).
 *
 * @param input - The duration as written in options or rules.
 * @param path - Where the value came from, used in the error message (e.g. `rules[0].window`).
 * @returns The duration in whole milliseconds.
 * @throws FloodgateError `FG_ERR_DURATION_INVALID` naming the value received.
 * @example
 * ```ts
 * parseDuration('1.5s') // 1500
 * parseDuration(250) // 250
 * ```
 */
export function parseDuration(input: string | number, path?: string): number {
  const ms = durationMs(input)
  if (ms === undefined) {
    const where = path ? `${path}: ` : ''
    throw new FloodgateError(
      'FG_ERR_DURATION_INVALID',
      `${where}expected a duration like '500ms', '10s', '1m', '1h', '1d' or a whole number of milliseconds, got ${formatValue(input)}`,
    )
  }
  return ms
}
