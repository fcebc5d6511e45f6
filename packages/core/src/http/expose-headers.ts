import { checkBoolean } from '../options/checks.js'
import { SHADOW_HEADER } from './enforce.js'
import type { HeaderFormat } from './headers.js'

/** The CORS response header that lets browser scripts read other response headers. */
export const EXPOSE_HEADERS = 'Access-Control-Expose-Headers'

/**
 * The header names a mount sends, for `Access-Control-Expose-Headers`: the RateLimit headers
 * of the chosen format, `Retry-After`, and `Floodgate-Shadow` when that header is on.
 *
 * @param format - the mount's header format (undefined: no RateLimit headers)
 * @param shadowHeader - whether the mount writes `Floodgate-Shadow`
 * @returns the names, comma-separated
 */
export function exposedHeaderNames(
  format: HeaderFormat | undefined,
  shadowHeader: boolean,
): string {
  const names: string[] = []
  if (format === 'ietf' || format === 'both' || format === 'draft-7') {
    names.push('RateLimit-Policy', 'RateLimit')
  }
  if (format === 'legacy' || format === 'both') {
    names.push('X-RateLimit-Limit', 'X-RateLimit-Remaining', 'X-RateLimit-Reset')
  }
  names.push('Retry-After')
  if (shadowHeader) names.push(SHADOW_HEADER)
  return names.join(', ')
}

/**
 * Validate the `exposeHeaders` adapter option, at startup.
 *
 * @param value - the option as given
 * @returns whether the option is on
 * @throws OptionsError when the value is not a boolean
 */
export function checkExposeHeaders(value: unknown): boolean {
  return checkBoolean('options.exposeHeaders', value, false)
}

/**
 * `names` appended to an existing `Access-Control-Expose-Headers` value (set by a CORS
 * middleware that ran first), leaving out names already there (compared case-insensitively).
 *
 * @param existing - the header's current value, if any
 * @param names - comma-separated names to add
 * @returns the merged value
 */
export function appendExposeHeaders(existing: unknown, names: string): string {
  const text =
    typeof existing === 'string'
      ? existing
      : Array.isArray(existing)
        ? existing.filter((v) => typeof v === 'string').join(',')
        : ''
  const current = text
    .split(',')
    .map((n) => n.trim())
    .filter((n) => n !== '')
  if (current.length === 0) return names
  const have = new Set(current.map((n) => n.toLowerCase()))
  for (const n of names.split(', ')) {
    if (!have.has(n.toLowerCase())) {
      have.add(n.toLowerCase())
      current.push(n)
    }
  }
  return current.join(', ')
}
