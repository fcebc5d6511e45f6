import type { Decision } from '../decision.js'
import { headerCount, limitField, policyField, seconds } from './rate-limit-fields.js'

/**
 * Which rate-limit header fields to send.
 * - `ietf`: `RateLimit-Policy` and `RateLimit` from draft-ietf-httpapi-ratelimit-headers.
 * - `legacy`: `X-RateLimit-Limit`, `X-RateLimit-Remaining`, `X-RateLimit-Reset` (seconds).
 * - `both`: all of them.
 */
export type HeaderDraft = 'ietf' | 'legacy' | 'both'

/** Options of {@link formatHeaders}. */
export interface FormatHeadersOptions {
  /** @default 'ietf' */
  readonly draft?: HeaderDraft | undefined
}

/** A header name and value, ready for `res.setHeader`. */
export type HeaderPair = readonly [name: string, value: string]

/**
 * Whole seconds a client should wait, never 0 or fractional (RFC 9110 §10.2.3 wants a
 * non-negative integer, and 0 invites an immediate retry storm).
 *
 * @param retryAfterMs - the decision's wait in milliseconds
 * @returns seconds, at least 1
 */
export function retryAfterSeconds(retryAfterMs: number): number {
  return retryAfterMs > 1000 && retryAfterMs <= Number.MAX_VALUE
    ? Math.ceil(retryAfterMs / 1000)
    : 1
}

/**
 * Turn a decision into response header pairs.
 *
 * Every enforced (non-shadow) matched rule appears in `RateLimit-Policy` and `RateLimit`;
 * `Retry-After` (whole seconds, rounded up, at least 1) is set when the request is refused.
 * A decision that failed open carries no rate-limit fields at all: claiming a full quota
 * while the store is down would mislead clients.
 *
 * @param decision - the limiter's decision
 * @param options - which header draft to use
 * @returns header pairs, possibly empty
 * @example
 * for (const [name, value] of formatHeaders(decision)) res.setHeader(name, value)
 */
export function formatHeaders(
  decision: Decision,
  options: FormatHeadersOptions = {},
): HeaderPair[] {
  const out: HeaderPair[] = []
  if (decision.failedOpen) return out
  const draft = options.draft ?? 'ietf'
  const policy = policyField(decision)
  if (policy !== '' && draft !== 'legacy') {
    out.push(['RateLimit-Policy', policy], ['RateLimit', limitField(decision)])
  }
  if (policy !== '' && draft !== 'ietf') {
    out.push(
      ['X-RateLimit-Limit', String(headerCount(decision.limit))],
      ['X-RateLimit-Remaining', String(headerCount(decision.remaining))],
      ['X-RateLimit-Reset', String(seconds(decision.resetMs))],
    )
  }
  if (!decision.allowed && (decision.action === 'reject' || decision.action === 'drop')) {
    out.push(['Retry-After', String(retryAfterSeconds(decision.retryAfterMs))])
  }
  return out
}
