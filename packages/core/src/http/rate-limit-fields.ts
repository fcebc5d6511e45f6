import type { Decision } from '../decision.js'
import type { Rule } from '../rules/rule.js'

// The `RateLimit-Policy` and `RateLimit` values (draft-ietf-httpapi-ratelimit-headers), for
// `formatHeaders` (headers.ts) and the adapters' request path: a rule's policy item never
// changes, so it is built once per rule, and a response with one enforced rule sends that same
// string every time.

interface RuleStrings {
  /** `"id";q=limit;w=seconds` (no `w` for in-flight limits): the rule's `RateLimit-Policy` item. */
  readonly policy: string
  /** `"id";r=`: the start of the rule's `RateLimit` item. */
  readonly remaining: string
}

/**
 * Whether a rule limits requests in flight (concurrency, adaptive): its policy has no window.
 *
 * @param rule - the rule
 * @returns true for an in-flight limit
 */
export function inFlightRule(rule: Rule): boolean {
  return rule.algorithm === 'concurrency' || rule.algorithm === 'adaptive'
}

/**
 * The largest number a header carries: a structured-field integer has at most 15 digits
 * (RFC 9651), and past 10^21 JavaScript writes a number as `1e+21`, which no header grammar
 * takes (`Retry-After` is digits only). 10^15 - 1 seconds is 31 million years: a wait that
 * long (a penalty of billions of units on a slow rule) is "do not come back" either way.
 */
export const MAX_HEADER_INTEGER = 999_999_999_999_999

/**
 * Whole seconds, rounded up, at most {@link MAX_HEADER_INTEGER}; 0 for a time already past and
 * for a number that is not one (NaN, infinite).
 */
export const seconds = (ms: number): number =>
  ms > 0 && ms <= Number.MAX_VALUE ? Math.min(Math.ceil(ms / 1000), MAX_HEADER_INTEGER) : 0

/** A count fit for a header: whole, at most {@link MAX_HEADER_INTEGER}; 0 for NaN, infinite or negative. */
export const headerCount = (n: number): number =>
  n >= 0 && n <= Number.MAX_VALUE ? Math.min(Math.floor(n), MAX_HEADER_INTEGER) : 0

// Rules are frozen, so their strings can be kept as long as the rule lives.
const byRule = new WeakMap<Rule, RuleStrings>()
// Most responses name the rule the previous one named: skip even the WeakMap.
let lastRule: Rule | undefined
let lastStrings: RuleStrings | undefined

function stringsOf(rule: Rule): RuleStrings {
  if (rule === lastRule) return lastStrings!
  let s = byRule.get(rule)
  if (s === undefined) {
    // Rule ids are restricted to [A-Za-z0-9._-] by the schema, so they are valid sf-strings.
    const id = `"${rule.id}"`
    s = {
      policy: inFlightRule(rule)
        ? `${id};q=${rule.limit}`
        : `${id};q=${rule.limit};w=${seconds(rule.windowMs)}`,
      remaining: `${id};r=`,
    }
    byRule.set(rule, s)
  }
  lastRule = rule
  lastStrings = s
  return s
}

/**
 * The `RateLimit-Policy` value of a decision: every enforced (non-shadow) outcome's policy
 * item, in rule order; `''` when there is none.
 *
 * @param decision - a decision that did not fail open
 * @returns the header value, or `''` for no header
 */
export function policyField(decision: Decision): string {
  const outcomes = decision.outcomes
  let policy = ''
  for (let i = 0; i < outcomes.length; i++) {
    const o = outcomes[i]!
    if (o.shadow) continue
    // An adaptive rule's quota is the limit in force now, not a number the rule states.
    const item =
      o.rule.algorithm === 'adaptive'
        ? `"${o.rule.id}";q=${headerCount(o.limit)}`
        : stringsOf(o.rule).policy
    policy = policy === '' ? item : `${policy}, ${item}`
  }
  return policy
}

/**
 * The `RateLimit` value of a decision: per enforced outcome, the units left and the seconds
 * until the quota resets (or, for a refusing rule, until a retry may pass).
 *
 * @param decision - a decision that did not fail open
 * @returns the header value, or `''` for no header
 */
export function limitField(decision: Decision): string {
  const outcomes = decision.outcomes
  let limit = ''
  for (let i = 0; i < outcomes.length; i++) {
    const o = outcomes[i]!
    if (o.shadow) continue
    const t = o.allowed ? seconds(o.resetMs) : seconds(o.retryAfterMs)
    const item = stringsOf(o.rule).remaining + headerCount(o.remaining) + ';t=' + t
    limit = limit === '' ? item : `${limit}, ${item}`
  }
  return limit
}
