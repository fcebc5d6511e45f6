import { EPSILON } from './algorithm.js'

/**
 * The grid on which a rate of `limit` per `windowMs` leaves a bucket's balance: with whole
 * costs and whole milliseconds every balance is a whole multiple of `1 / scale` units, where
 * `scale = windowMs / gcd(limit, windowMs)`, and `perMs = limit / gcd(limit, windowMs)` of
 * those steps drain each millisecond. Counted in steps (`units × scale`), every balance, cost,
 * capacity and drain is a whole number, exact in a double up to 2^53.
 */
export interface ExactRate {
  /** Steps per unit: `windowMs / gcd(limit, windowMs)`. */
  readonly scale: number
  /** `1 / scale`, rounded: for estimates that are confirmed by the exact test. */
  readonly perStep: number
  /** Steps drained per millisecond: `limit / gcd(limit, windowMs)`. */
  readonly perMs: number
  /**
   * Slack of the admission test, in steps: EPSILON units (for fractional costs), never more
   * than a quarter step, so that whole-step decisions stay exact.
   */
  readonly tol: number
}

/**
 * The largest balance, in steps, that the bucket algorithms keep exactly: a balance stored as
 * units (`steps / scale`, one rounding) and read back (`× scale`, another) is within
 * `steps × 2^-52` of its whole number, which is under half a step up to here. Rules whose
 * `burst × scale` is larger are refused when compiled.
 */
export const MAX_EXACT_SCALED: number = 2 ** 50

// The last rate asked for: a store calls with the same params many times in a row, and the
// gcd (a few modulo steps) is then not redone. One object, written in place: no allocation.
const last = {
  limit: Number.NaN,
  windowMs: Number.NaN,
  scale: 1,
  perStep: 1,
  perMs: 1,
  tol: EPSILON,
}

/**
 * The exact grid of a rate (see {@link ExactRate}). The object returned is reused by the next
 * call: read its fields at once. A limit or window that is not a whole number has no grid:
 * the steps are then plain units (`scale` 1), as before.
 */
export function exactRate(limit: number, windowMs: number): ExactRate {
  if (limit !== last.limit || windowMs !== last.windowMs) {
    let scale = 1
    let perMs = limit / windowMs
    if (
      Number.isSafeInteger(limit) &&
      Number.isSafeInteger(windowMs) &&
      limit > 0 &&
      windowMs > 0
    ) {
      let a = limit
      let b = windowMs
      while (b !== 0) {
        const t = a % b
        a = b
        b = t
      }
      scale = windowMs / a
      perMs = limit / a
    }
    last.limit = limit
    last.windowMs = windowMs
    last.scale = scale
    last.perStep = 1 / scale
    last.perMs = perMs
    last.tol = Math.min(EPSILON * scale, 0.25)
  }
  return last
}

/**
 * A balance in steps read back from a stored double: within its rounding (`x × 2^-51`, twice
 * the most a store and read-back can move it) of a whole number, that whole number. Past
 * {@link MAX_EXACT_SCALED} the slack reaches half a step and the read is only approximate.
 */
export function wholeSteps(x: number): number {
  // The nearest whole number, ties up (Lua: floor, then up when the rest is half or more).
  const whole = Math.round(x)
  const off = x - whole
  return (off < 0 ? -off : off) <= x * 2 ** -51 ? whole : x
}
