import type { AlgorithmName } from '../algorithms/algorithm.js'

/**
 * One part of a rule's key: `'ip'`, `'user'`, `'header:<name>'` (lower-case name) or
 * `'custom:<name>'` (a key builder registered with the limiter under that name).
 */
export type KeyPart = 'ip' | 'user' | `header:${string}` | `custom:${string}`

/** What a rule does when a key has no value (an anonymous request for a `user` rule). */
export type FallbackKey =
  /** Key the request by its client IP instead (default). */
  | 'ip'
  /** The rule does not apply to the request. */
  | 'skip'
  /** All requests without a key share one bucket. */
  | 'shared'

/** What happens to a request over the limit. */
export type OverLimit =
  | { readonly action: 'reject'; readonly status: 429 | 503 }
  | { readonly action: 'queue'; readonly maxWaitMs: number; readonly maxQueue: number }
  | { readonly action: 'drop' }

/**
 * The penalty box: a client refused `after` times within `withinMs` is refused outright for
 * `forMs`, whatever its limit says.
 */
export interface RuleBan {
  /** Refusals that start a ban. */
  readonly after: number
  /** The sliding period the refusals are counted in, in milliseconds. */
  readonly withinMs: number
  /** How long a ban lasts, in milliseconds. */
  readonly forMs: number
}

/** Which requests a rule applies to. Every present condition must hold. */
export interface RuleMatch {
  /** Upper-case HTTP methods; absent means every method. */
  readonly methods?: readonly string[] | undefined
  /**
   * Path patterns, matched segment by segment against the route pattern when the framework
   * knows it, else the path: `/users/:id` (`:name` and `*` match one segment), `/api/**`
   * (`**` as the last segment matches the rest). Absent means every path.
   */
  readonly paths?: readonly string[] | undefined
  /** Header conditions (lower-case names): a string must equal the value; `true` means present. */
  readonly headers?: Readonly<Record<string, string | true>> | undefined
  /** Host names (lower-case, no port); `*.example.com` matches sub-domains. */
  readonly hosts?: readonly string[] | undefined
}

/**
 * A validated, normalised rule: the output of {@link parseRules}. Durations are milliseconds
 * and every default is filled in.
 */
export interface Rule {
  readonly id: string
  readonly description?: string | undefined
  readonly match: RuleMatch
  /** Key parts; several parts form a composite key. */
  readonly key: readonly KeyPart[]
  readonly fallbackKey: FallbackKey
  readonly algorithm: AlgorithmName
  /** Requests (cost units) per window; concurrent requests for `concurrency`. */
  readonly limit: number
  readonly windowMs: number
  /** Bucket capacity for token-bucket, GCRA and leaky-bucket; defaults to `limit`. */
  readonly burst: number
  /** Units charged per request (multiplied by a route's cost). */
  readonly cost: number
  readonly onLimit: OverLimit
  /** Evaluate and report, never block. */
  readonly shadow: boolean
  /** Ban clients refused too often; absent: no ban. A shadow rule never bans. */
  readonly ban?: RuleBan | undefined
}
