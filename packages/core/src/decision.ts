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
  /**
   * HTTP status to answer: 200 when allowed or queued, else 429 or 503 (the rule's choice), the
   * limiter's `denyStatus` (403 by default) for a client on the deny list, 503 for a request no
   * rule matches under `unmatched: 'reject'`.
   */
  readonly status: DecisionStatus
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
   * The limiter's clock reading (epoch milliseconds) the decision was made with: `resetMs`,
   * `retryAfterMs` and `waitMs` count from it, so `decidedAtMs + resetMs` is when the quota is
   * back. Every time header derives from it, never from a later reading. When the store keeps
   * its own clock (RedisStore with Redis's `TIME`), the durations are the store's and this is
   * the limiter's reading just before it asked. 0 for a decision no rule counted (allow or deny
   * list, no rule matched, failed open).
   */
  readonly decidedAtMs: number
  /**
   * True when a rule refused because it bans the client (its `ban`): `retryAfterMs` is then
   * the time left in the ban. Absent otherwise.
   */
  readonly banned?: boolean
  /**
   * Set when the limiter decided without counting: the client is on the `deny` list
   * (`'deny-list'`) or the `allow` list (`'allow-list'`), or no rule matched the request
   * (`'unmatched'`). Undefined for every decision the rules made.
   */
  readonly reason?: DecisionReason | undefined
}

/** The statuses a decision can carry. */
export type DecisionStatus = 200 | 403 | 404 | 429 | 503

/** Why a decision was made without counting (see `Decision.reason`). */
export type DecisionReason = 'deny-list' | 'allow-list' | 'unmatched'
