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
 * Which admitted requests a rule keeps counted once their response is known. A request is
 * charged when it is admitted (so the limit holds while it runs); when its response ends, a
 * rule that does not count that outcome gives the units back through the store's refund.
 */
export type CountMode =
  /** Every admitted request (default). */
  | 'all'
  /** Only requests whose response failed (login protection: failed attempts per window). */
  | 'failed'
  /** Only requests whose response succeeded. */
  | 'successful'

/**
 * The algorithm a rule names: one of core's {@link AlgorithmName}s, or `'adaptive'`, whose limit
 * on requests in flight follows the service's measured latency (see {@link RuleAdaptive}).
 */
export type RuleAlgorithm = AlgorithmName | 'adaptive'

/**
 * The settings of an adaptive rule (`algorithm: 'adaptive'`), normalised: durations in
 * milliseconds and every default filled in. The rule limits the requests in flight on this
 * host; once per `windowMs` the limit moves so that the `percentile` of the latencies measured
 * in that window stays near `targetMs`, or without a target near `tolerance` times the
 * latency the service has without load (its baseline).
 */
export interface RuleAdaptive {
  /** The latency percentile watched, above 0 and below 100 (99 watches p99). */
  readonly percentile: number
  /** The latency the percentile should stay under; undefined: follow the measured baseline. */
  readonly targetMs: number | undefined
  /** How far above the baseline the percentile may go when there is no target (1.5: +50%). */
  readonly tolerance: number
  /** How often the limit moves, and the window its latencies come from. */
  readonly windowMs: number
  /** The lowest limit (requests in flight). */
  readonly minLimit: number
  /** The highest limit. */
  readonly maxLimit: number
  /** The limit before the first window has been measured. */
  readonly initialLimit: number
  /** The share of the computed move taken each window, above 0 and at most 1 (1: no smoothing). */
  readonly smoothing: number
  /** The largest fall of the limit in one window, as a fraction of it (0.5: at most halved). */
  readonly maxDecrease: number
  /** The largest rise of the limit in one window, as a fraction of it (1: at most doubled). */
  readonly maxIncrease: number
  /** Fewer responses than this in a window move nothing: too few to tell a percentile. */
  readonly minSamples: number
  /**
   * The share of the limit kept for clients within their fair share of the slots in flight: a
   * client above its share is refused once the requests in flight reach `(1 - reserve) × limit`.
   * 0 turns fairness off.
   */
  readonly reserve: number
  /**
   * The name of a gate shared with other adaptive rules (one limit, one latency window for all
   * their requests), or undefined for a gate of the rule's own. Rules sharing a gate have the
   * same settings and key; they differ in `match` and `priority`.
   */
  readonly gate: string | undefined
  /**
   * `'background'` requests are shed first: they never take the reserve, so they are refused
   * as soon as the requests in flight reach `(1 - reserve) × limit`, while `'normal'` ones
   * still pass within their fair share.
   */
  readonly priority: 'normal' | 'background'
}

/** One tier of a rule: the limit that applies to the requests of that tier. */
export interface RuleTier {
  /** Requests (cost units) per window; concurrent requests for `concurrency`. */
  readonly limit: number
  readonly windowMs: number
  /** Bucket capacity for token-bucket, GCRA and leaky-bucket; defaults to the tier's `limit`. */
  readonly burst: number
}

/**
 * Limits chosen per request from a key part, such as the client's plan (`header:x-plan`,
 * `custom:plan`). Each tier keeps its own state.
 */
export interface RuleTiers {
  /** The key part whose value names the tier. */
  readonly by: Exclude<KeyPart, 'ip'>
  /** Tier name to limit. */
  readonly values: Readonly<Record<string, RuleTier>>
  /**
   * The tier of a request whose key part is absent or names no tier. Undefined: the rule's
   * own `limit` and `window` apply to such requests.
   */
  readonly default: string | undefined
}

/**
 * Clients a rule names up front: addresses and CIDR ranges (IPv4 or IPv6), and values of key
 * parts. An IPv4 entry also covers the IPv4-mapped IPv6 spelling of its addresses.
 */
export interface RuleAccessList {
  /** Addresses (`'198.51.100.7'`) and CIDR ranges (`'198.51.100.0/24'`, `'2001:db8::/32'`). */
  readonly ips: readonly string[]
  /** Values by key part (`'user'`, `'header:<name>'`, `'custom:<name>'`), matched exactly. */
  readonly keys: Readonly<Record<string, readonly string[]>>
}

/** A rule's deny list: listed clients are refused with `status`, before any rule counts them. */
export interface RuleDenyList extends RuleAccessList {
  /** The status a listed client gets; 403 unless set. */
  readonly status: 403 | 404 | 429 | 503
}

/**
 * A validated, normalised rule: the output of {@link parseRules}. Durations are milliseconds
 * and every default is filled in.
 */
export interface Rule {
  readonly id: string
  readonly description?: string | undefined
  /**
   * Clients refused outright on the requests this rule matches, before any rule counts them
   * (a deny list wins over every allow list). Absent: none.
   */
  readonly deny?: RuleDenyList | undefined
  /** Clients this rule does not count (other rules still do). Absent: none. */
  readonly allow?: RuleAccessList | undefined
  /**
   * Which requests the rule counts; `false`: no HTTP request, the rule is used through
   * `limiter.limit()` (WebSocket messages, jobs, GraphQL fields) and the client-state calls.
   */
  readonly match: RuleMatch | false
  /** Key parts; several parts form a composite key. */
  readonly key: readonly KeyPart[]
  readonly fallbackKey: FallbackKey
  readonly algorithm: RuleAlgorithm
  /**
   * Requests (cost units) per window; concurrent requests for `concurrency`; for `adaptive`,
   * its `maxLimit` (the live limit is `limiter.adaptive(id).limit`).
   */
  readonly limit: number
  readonly windowMs: number
  /** Bucket capacity for token-bucket, GCRA and leaky-bucket; defaults to `limit`. */
  readonly burst: number
  /** Units charged per request (multiplied by a route's cost). */
  readonly cost: number
  readonly onLimit: OverLimit
  /** Evaluate and report, never block. */
  readonly shadow: boolean
  /** Which admitted requests stay counted once their response is known. */
  readonly count: CountMode
  /** Per-request limits by tier; absent when the rule has one limit for everyone. */
  readonly tiers?: RuleTiers | undefined
  /** Ban clients refused too often; absent: no ban. A shadow rule never bans. */
  readonly ban?: RuleBan | undefined
  /** The settings of an `adaptive` rule; absent for every other algorithm. */
  readonly adaptive?: RuleAdaptive | undefined
}
