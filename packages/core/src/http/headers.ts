import type { Decision } from '../decision.js'
import { headerCount, inFlightRule, limitField, policyField, seconds } from './rate-limit-fields.js'

/**
 * Which rate-limit header fields to send; the one list of formats every Floodgate adapter and
 * {@link formatHeaders} accept.
 * - `ietf`: `RateLimit-Policy` and `RateLimit` as draft-ietf-httpapi-ratelimit-headers-11
 *   structures them: one named item per enforced rule (`"per-ip";q=100;w=60` and
 *   `"per-ip";r=99;t=60`).
 * - `draft-7`: the combined fields of draft-ietf-httpapi-ratelimit-headers-07, byte for byte what
 *   express-rate-limit's `standardHeaders: 'draft-7'` sends: `RateLimit-Policy: 100;w=60` and
 *   `RateLimit: limit=100, remaining=99, reset=60`, for the most restrictive enforced rule.
 * - `legacy`: `X-RateLimit-Limit`, `X-RateLimit-Remaining` and `X-RateLimit-Reset`, the reset as
 *   epoch seconds (when the quota is back), as express-rate-limit's `legacyHeaders` and GitHub
 *   send it.
 * - `both`: `ietf` and `legacy` together.
 */
export type HeaderFormat = 'ietf' | 'draft-7' | 'legacy' | 'both'

/** Every {@link HeaderFormat}, for option checks and documentation. */
export const HEADER_FORMATS: readonly HeaderFormat[] = ['ietf', 'draft-7', 'legacy', 'both']

/** Options of {@link formatHeaders}. */
export interface FormatHeadersOptions {
  /** @default 'ietf' */
  readonly format?: HeaderFormat | undefined
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
  return retryAfterMs > 1000 && retryAfterMs <= Number.MAX_VALUE ? seconds(retryAfterMs) : 1
}

/**
 * The `X-RateLimit-Reset` value: the epoch second at which the quota is back, rounded up,
 * counted from the instant the decision was made (`decidedAtMs`), never from a later reading:
 * a millisecond that ticks between the decision and the header would otherwise push the value
 * a second late whenever the reset falls on a whole second (a clock-aligned window).
 *
 * @param decision - the decision (its `decidedAtMs` and `resetMs`)
 * @returns epoch seconds
 */
export function epochResetSeconds(decision: Decision): number {
  const resetMs = decision.resetMs
  return seconds(decision.decidedAtMs + (resetMs > 0 ? resetMs : 0))
}

/**
 * The draft-7 pair for a decision: `RateLimit-Policy: <limit>;w=<window s>` and
 * `RateLimit: limit=<limit>, remaining=<n>, reset=<s>`, from the decision's summary (its most
 * restrictive enforced rule). Empty for a decision no enforced rule judged.
 *
 * @param decision - a decision that did not fail open
 * @returns the two values, or undefined for no headers
 */
export function draft7Fields(
  decision: Decision,
): { readonly policy: string; readonly limit: string } | undefined {
  const rule = decision.rule
  if (rule === undefined || !decision.outcomes.some((o) => !o.shadow)) return undefined
  const limit = headerCount(decision.limit)
  return {
    policy: inFlightRule(rule) ? `${limit}` : `${limit};w=${seconds(rule.windowMs)}`,
    limit: `limit=${limit}, remaining=${headerCount(decision.remaining)}, reset=${seconds(decision.resetMs)}`,
  }
}

/**
 * Turn a decision into response header pairs.
 *
 * Every enforced (non-shadow) matched rule appears in the `ietf` fields; `draft-7` and `legacy`
 * describe the most restrictive one. `Retry-After` (whole seconds, rounded up, at least 1) is
 * set when the request is refused. A decision that failed open carries no rate-limit fields at
 * all: claiming a full quota while the store is down would mislead clients.
 *
 * @param decision - the limiter's decision
 * @param options - which header format to use
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
  const format = options.format ?? 'ietf'
  if (format === 'draft-7') {
    const fields = draft7Fields(decision)
    if (fields) out.push(['RateLimit-Policy', fields.policy], ['RateLimit', fields.limit])
  } else {
    const policy = policyField(decision)
    if (policy !== '' && format !== 'legacy') {
      out.push(['RateLimit-Policy', policy], ['RateLimit', limitField(decision)])
    }
    if (policy !== '' && format !== 'ietf') {
      out.push(
        ['X-RateLimit-Limit', String(headerCount(decision.limit))],
        ['X-RateLimit-Remaining', String(headerCount(decision.remaining))],
        ['X-RateLimit-Reset', String(epochResetSeconds(decision))],
      )
    }
  }
  if (!decision.allowed && (decision.action === 'reject' || decision.action === 'drop')) {
    out.push(['Retry-After', String(retryAfterSeconds(decision.retryAfterMs))])
  }
  return out
}
