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
  return canonicalPath(pattern)
    .slice(1)
    .split('/')
    .map((s) => (s === '**' ? REST : s === '*' || s.startsWith(':') ? ONE : s.toLowerCase()))
}

/**
 * Splits a request target (or a route pattern) into lower-case segments of its canonical path
 * ({@link canonicalPath}: no scheme and host, no query string, unreserved characters decoded).
 * Empty segments (`//`, a trailing slash) are skipped, so `/a//b/` is `/a/b`: a client must not
 * escape a rule by spelling the path differently.
 */
export function pathSegments(target: string): string[] {
  const path = canonicalPath(target)
  const end = path.length
  const out: string[] = []
  let start = 0
  for (let i = 0; i <= end; i++) {
    if (i === end || path.charCodeAt(i) === 47 /* / */) {
      if (i > start) out.push(path.slice(start, i).toLowerCase())
      start = i + 1
    }
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
