import type { Rule } from './rules/rule.js'

/** What the adapter does with the request. */
export type DecisionAction = 'allow' | 'reject' | 'queue' | 'drop'

/** How one matched rule judged the request. */
export interface RuleOutcome {
  readonly rule: Rule
  /**
   * The client key the rule counted (bounded length; hashed when long). It may be a raw header
   * value such as an API key: do not log or expose it verbatim.
   */
  readonly key: string
  /** Whether this rule alone would admit the request. */
  readonly allowed: boolean
  readonly limit: number
  readonly remaining: number
  readonly resetMs: number
  readonly retryAfterMs: number
  /** Reservation wait when the rule queued the request. */
  readonly waitMs: number
  readonly shadow: boolean
  /** True when the rule refused because it bans this client (its `ban`); absent otherwise. */
  readonly banned?: boolean
}

/**
 * The limiter's answer for one request. Being limited is a result, not an error.
 *
 * The summary fields (`limit`, `remaining`, `resetMs`) come from the most restrictive
 * enforced outcome; `retryAfterMs` from the refusing rule that asks to wait longest.
 */
export interface Decision {
  /** True for `allow` and `queue`: the request proceeds (after `waitMs` when queued). */
  readonly allowed: boolean
  readonly action: DecisionAction
  /** HTTP status to answer: 200 when allowed or queued, else 429 or 503 (the rule's choice). */
  readonly status: 200 | 429 | 503
  readonly limit: number
  readonly remaining: number
  readonly resetMs: number
  readonly retryAfterMs: number
  /** How long a queued request waits before it proceeds; 0 otherwise. */
  readonly waitMs: number
  /** The rule that decided a refusal or a queueing; the most restrictive rule when allowed. */
  readonly rule: Rule | undefined
  /** Every matched rule's outcome, shadow rules included, in rule order. */
  readonly outcomes: readonly RuleOutcome[]
  /** True when the store failed or missed its deadline and the request passed unjudged. */
  readonly failedOpen: boolean
  /**
   * True when a rule refused because it bans the client (its `ban`): `retryAfterMs` is then
   * the time left in the ban. Absent otherwise.
   */
  readonly banned?: boolean
}
