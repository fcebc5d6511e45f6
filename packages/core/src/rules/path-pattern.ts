/**
 * Path patterns as rules write them: `/users/:id`, `/files/*`, `/api/**`. A pattern is a list
 * of segments, each a literal, a parameter (`:name`, one segment), `*` (one segment) or, as
 * the last segment only, `**` (any number of segments, zero included). No regular expression
 * is ever built from a pattern: matching walks segments. Patterns and request paths both go
 * through {@link canonicalPath} first, so they are compared in one spelling.
 */
import { canonicalPath } from './canonical-path.js'

/** A segment kind: a literal (lower-cased), ONE (`:name` or `*`) or REST (`**`). */
export const ONE = 1
export const REST = 2

/** A compiled pattern: literals are lower-case strings, wildcards are numbers. */
export type PatternSegment = string | typeof ONE | typeof REST

const PARAM = /^:[A-Za-z_][A-Za-z0-9_]*$/
const MAX_PATTERN_LENGTH = 1024

/**
 * Validates and normalises a pattern (drops a trailing slash).
 *
 * @returns the normalised pattern, or an `expected …` phrase describing what is wrong.
 */
export function checkPathPattern(input: string): { pattern: string } | { error: string } {
  if (!input.startsWith('/')) return { error: "a path pattern starting with '/'" }
  if (input.length > MAX_PATTERN_LENGTH) {
    return { error: `a path pattern of at most ${MAX_PATTERN_LENGTH} characters` }
  }
  if (/[?#\s]/.test(input)) {
    return { error: 'a path pattern without a query string, fragment or spaces' }
  }
  const pattern = input.length > 1 && input.endsWith('/') ? input.slice(0, -1) : input
  if (pattern === '/') return { pattern }
  const segments = pattern.slice(1).split('/')
  // Read as requests are (`%2e` is '.'): a dot segment is not a place a rule can name, and
  // kept as a literal it would match only requests spelled with it, never the path it leads to.
  if (
    canonicalPath(pattern)
      .split('/')
      .some((s) => s === '.' || s === '..')
  ) {
    return {
      error:
        "a path pattern without '.' or '..' segments (write the path they lead to: '/b', not '/a/../b')",
    }
  }
  for (let i = 0; i < segments.length; i++) {
    const s = segments[i]!
    if (s === '') return { error: "a path pattern without empty segments ('//')" }
    if (s === '**') {
      if (i !== segments.length - 1)
        return { error: "a path pattern with '**' only as the last segment" }
    } else if (s.startsWith(':')) {
      if (!PARAM.test(s)) return { error: "a path pattern whose parameters are named like ':id'" }
    } else if (s !== '*' && s.includes('*')) {
      return { error: "a path pattern whose wildcards are whole segments ('*' or '**')" }
    }
  }
  return { pattern }
}

/** Compiles a pattern already accepted by {@link checkPathPattern}. */
export function compilePattern(pattern: string): PatternSegment[] {
  if (pattern === '/') return []
  // Kinds are read as written, before decoding: `%3Aid` and `%2A` are the characters `:id` and
  // `*`, literals like any other, never a parameter or a wildcard.
  return pattern
    .slice(1)
    .split('/')
    .map((s) =>
      s === '**'
        ? REST
        : s === '*' || s.startsWith(':')
          ? ONE
          : canonicalPath(`/${s}`).slice(1).toLowerCase(),
    )
}

/**
 * Splits a route pattern, as a framework reports it (`/users/:id?`, `/:y(^\\d{4}?)`), into
 * lower-case segments spelled as {@link pathReadings} spells a path's. Unlike a request target,
 * a route has no query string or fragment, so neither `?` nor `#` cuts it short (cut,
 * `/users/:id?` would read as `/users/:id`, a route that cannot serve `/users`): `?` is
 * syntax (an optional parameter, a lazy quantifier) and is kept, and `#` is a literal
 * character, which a path spells `%23`.
 */
export function routeSegments(route: string): string[] {
  const out: string[] = []
  for (const segment of route.split('/')) {
    if (segment === '') continue
    // The pieces between `?`s are canonicalised as path segments; the `?`s stay as they are.
    const pieces = segment.replaceAll('#', '%23').split('?')
    out.push(
      pieces
        .map((piece) => canonicalPath(`/${piece}`).slice(1))
        .join('?')
        .toLowerCase(),
    )
  }
  return out
}

// Lower-case segments of a canonical path, empty ones included; with `slashes`, an encoded
// slash (`%2F`, upper-case in the canonical form) separates segments too.
function split(path: string, slashes: boolean): string[] {
  const end = path.length
  const out: string[] = []
  let start = 0
  for (let i = 0; i <= end; i++) {
    let width = 0
    if (i === end || path.charCodeAt(i) === 47 /* / */) width = 1
    else if (slashes && path.startsWith('%2F', i)) width = 3
    else continue
    if (i !== 0 || width === 3) out.push(path.slice(start, i).toLowerCase())
    start = i + width
    i += width - 1
  }
  return out
}

// RFC 3986 §5.2.4: `.` goes, `..` takes the segment before it (none above the root). With
// `empties`, an empty segment is a segment (`/a//../b` is `/a/b`, as WHATWG URL reads it);
// without, empty segments are dropped first (`/a//../b` is `/b`, as path.normalize reads it).
function resolveDots(segments: readonly string[], empties: boolean): string[] {
  const out: string[] = []
  for (const s of segments) {
    if (s === '..') out.pop()
    else if (s !== '.' && (empties || s !== '')) out.push(s)
  }
  return out.filter((s) => s !== '')
}

/**
 * Every way the components behind the limiter read a request target's path, as segment lists
 * (lower-case, no empty segments): the first is the path as the router reads it (its
 * {@link canonicalPath}, empty segments such as `//` and a trailing slash skipped); then, when the path has an encoded slash or a dot segment, the path
 * as a file server (Express's `express.static`, koa-send, `@fastify/static`), a wildcard
 * parameter or a WHATWG URL reads it: `%2F` decoded to `/` or kept, dot segments resolved
 * (`/x/../files/a` and `/files%2Fa` are `/files/a` to `express.static`). A rule applies when it
 * matches any reading, so a spelling that one of them serves as `/files/a` cannot step around
 * a rule on `/files/**`; a request may meet a rule it did not need, a handler never fewer.
 *
 * @param target - the request target as received, or a path
 * @returns one segment list, or several distinct ones
 */
export function pathReadings(target: string): string[][] {
  const path = canonicalPath(target)
  const routed = split(path, false)
  const slashes = path.includes('%2F')
  if (!slashes && !routed.some((s) => s === '.' || s === '..')) {
    return [routed.filter((s) => s !== '')]
  }
  const seen = new Set<string>()
  const out: string[][] = []
  const add = (segments: string[]): void => {
    const key = segments.join('/')
    if (seen.has(key)) return
    seen.add(key)
    out.push(segments)
  }
  for (const segments of slashes ? [routed, split(path, true)] : [routed]) {
    add(segments.filter((s) => s !== ''))
    add(resolveDots(segments, true))
    add(resolveDots(segments, false))
  }
  return out
}

/** Whether compiled `pattern` matches the segments of a path. */
export function matchSegments(
  pattern: readonly PatternSegment[],
  segments: readonly string[],
): boolean {
  const n = pattern.length
  for (let i = 0; i < n; i++) {
    const p = pattern[i]!
    if (p === REST) return true
    if (i >= segments.length) return false
    if (p !== ONE && p !== segments[i]) return false
  }
  return n === segments.length
}

/** Whether a pattern has only literal segments (then a Map lookup finds it). */
export function isLiteral(pattern: readonly PatternSegment[]): pattern is string[] {
  return pattern.every((p) => typeof p === 'string')
}
