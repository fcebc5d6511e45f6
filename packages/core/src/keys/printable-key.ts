import { keyDigest } from './hash-key.js'

/**
 * Longest text {@link printableKey} answers: the longest client a fleet report may carry (the
 * rules service's `REPORT_LIMITS.clientLength`).
 */
export const MAX_PRINTABLE_KEY_LENGTH = 256

/**
 * What a printed key must not hold: control characters (C0, DEL, C1), the line and paragraph
 * separators (U+2028, U+2029: line breaks to JavaScript and to some log viewers) and lone
 * surrogates, which no UTF-8 text can hold. The backslash is escaped too, so the escapes are
 * the only backslashes of a printed key.
 */
const UNPRINTABLE = /[\p{Cc}\u2028\u2029\p{Cs}\\]/u

/** The same set, for replacing every match. */
const UNPRINTABLE_ALL = /[\p{Cc}\u2028\u2029\p{Cs}\\]/gu

/** Printed form of a key whose escaped form would be too long: `\#` is never an escape. */
const DIGESTED = '\\#'

const escapeOne = (c: string): string =>
  c === '\\' ? '\\\\' : `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`

/**
 * A stored client key as text that can be printed, logged, shown on a page or sent in a fleet
 * report, one text per key:
 *
 * - a key of printable characters without a backslash (an API key, an address) is its own text;
 * - otherwise each backslash is doubled and each control character, U+2028, U+2029 and lone
 *   surrogate is written `\uXXXX` (the IP fallback of a client `\u0000ip:203.0.113.7`, the
 *   separator of a composite key `u1\u001facme`), as a JSON string literal would write it;
 * - a key whose escaped text would be longer than {@link MAX_PRINTABLE_KEY_LENGTH} characters
 *   is `\#` and 22 base64url characters of its SHA-256 (a backslash and `#` is no escape, so no
 *   other key prints as that).
 *
 * Distinct keys print as distinct texts (up to a SHA-256 collision for the longest), so a list
 * of printed keys never adds two clients up.
 *
 * @param key - a stored client key (at most 129 characters, but any string is taken)
 * @returns the printable text, at most {@link MAX_PRINTABLE_KEY_LENGTH} characters
 */
export function printableKey(key: string): string {
  if (key.length <= MAX_PRINTABLE_KEY_LENGTH && !UNPRINTABLE.test(key)) return key
  const text = key.replace(UNPRINTABLE_ALL, escapeOne)
  return text.length <= MAX_PRINTABLE_KEY_LENGTH ? text : DIGESTED + keyDigest(key)
}

/**
 * Whether a text could be printed as it is: at most {@link MAX_PRINTABLE_KEY_LENGTH}
 * characters, none of them a control character, U+2028, U+2029 or a lone surrogate.
 *
 * @param text - any string
 * @returns true when the text is safe to print and to send in a fleet report
 */
export function isPrintable(text: string): boolean {
  return (
    text.length > 0 &&
    text.length <= MAX_PRINTABLE_KEY_LENGTH &&
    !/[\p{Cc}\u2028\u2029\p{Cs}]/u.test(text)
  )
}
