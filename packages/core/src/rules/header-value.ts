/**
 * What a request can carry in a header, as Node hands it over (HTTP/1.1 and HTTP/2 alike): the
 * spaces and tabs around a value are dropped, a control character gets the request a 400, and
 * each byte is read as one character (latin1). A value a rule compares with that no request
 * can carry (`'free '`, a character above U+00FF) would make a condition that never holds or a
 * list entry that never applies, silently.
 */

/** What a header value must be, phrased to follow "expected" in an error message. */
export const HEADER_VALUE_EXPECTED =
  'a header value a request can carry (no space or tab at either end, no control character, no character above U+00FF: header bytes are read as latin1)'

// Any character other than a tab, printable ASCII and the latin1 bytes 0x80-0xFF.
const NOT_CARRIED = /[^\t\x20-\x7e\x80-\xff]/

/**
 * Whether some request can carry `value` in a header, exactly as written.
 *
 * @param value - the value a rule or list compares with
 * @returns true for the empty value and for values of tabs, printable ASCII and latin1 bytes
 * with no space or tab at either end
 */
export function isCarriedHeaderValue(value: string): boolean {
  if (value === '') return true
  const first = value.charCodeAt(0)
  const last = value.charCodeAt(value.length - 1)
  if (first === 32 || first === 9 || last === 32 || last === 9) return false
  return !NOT_CARRIED.test(value)
}

/**
 * {@link isCarriedHeaderValue} as a JSON Schema `pattern` (ECMA-262): empty, or visible
 * characters at both ends with tabs and spaces allowed between.
 */
export const HEADER_VALUE_PATTERN: string =
  '^(?:[\\x21-\\x7e\\x80-\\xff](?:[\\t\\x20-\\x7e\\x80-\\xff]*[\\x21-\\x7e\\x80-\\xff])?)?$'
