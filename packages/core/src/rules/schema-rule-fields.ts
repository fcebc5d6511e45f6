import type { CountMode, FallbackKey, KeyPart, RuleAlgorithm, RuleMatch } from './rule.js'
import { RULE_ALGORITHM_NAMES } from './algorithm-catalog.js'
import { adaptive } from './schema-adaptive.js'
import {
  E,
  RULE_ID,
  ban,
  boolean,
  cost,
  count,
  duration,
  key,
  match,
  onLimit,
  positiveInt,
  rate,
  tiers,
} from './schema-fields.js'
import type { Checker } from './schema-issues.js'
import { type Bad } from './schema-issues.js'
import { allow, deny } from './schema-lists.js'
import { oneOf, type Field } from './schema-object.js'

/** A rule as written in JSON, YAML or code: what {@link parseRules} accepts. */
export interface RuleInput {
  /** 1-64 letters, digits, `.`, `_` or `-`, other than `.` and `..`; unique within a rule set. */
  id: string
  description?: string | undefined
  /**
   * Clients refused on the requests this rule matches, before any rule counts them: addresses
   * and CIDR ranges in `ips`, key values in `keys` (`{ 'header:x-api-key': ['leaked'] }`);
   * `status` 403 unless set (404, 429 or 503).
   */
  deny?:
    | {
        ips?: string[] | undefined
        keys?: { [part: string]: string[] } | undefined
        status?: 403 | 404 | 429 | 503 | undefined
      }
    | undefined
  /** Clients this rule does not count: `ips` and `keys`, as in `deny`. */
  allow?:
    { ips?: string[] | undefined; keys?: { [part: string]: string[] } | undefined } | undefined
  /**
   * `'POST /export'`, `'/api/**'`, or an object of conditions; absent matches every request;
   * `false` matches no HTTP request (a rule used through `limiter.limit()`).
   */
  match?:
    | false
    | string
    | {
        methods?: string | string[] | undefined
        paths?: string | string[] | undefined
        headers?: { readonly [name: string]: string | true } | undefined
        hosts?: string | string[] | undefined
      }
    | undefined
  /** `'ip'` (the default), `'user'`, `'header:<name>'`, `'custom:<name>'`, or a list of them. */
  key?: string | string[] | undefined
  fallbackKey?: FallbackKey | undefined
  limit?: number | undefined
  /** `'10s'`, `'1m'`, … or milliseconds. */
  window?: string | number | undefined
  /** `'10/s'` or `'100/1m'`: instead of limit and window. */
  rate?: string | undefined
  algorithm?: RuleAlgorithm | undefined
  burst?: number | undefined
  cost?: number | undefined
  onLimit?:
    | 'reject'
    | 'drop'
    | { action: 'reject'; status?: 429 | 503 | undefined }
    | { action: 'queue'; maxWait: string | number; maxQueue?: number | undefined }
    | { action: 'drop' }
    | undefined
  shadow?: boolean | undefined
  /** After `after` refusals within `within`, refuse the client outright for `for`. */
  ban?: { after: number; within: string | number; for: string | number } | undefined
  /** Which admitted requests stay counted once their response is known; `'all'` by default. */
  count?: CountMode | undefined
  /** Limits chosen per request by the value of a key part, such as the client's plan. */
  tiers?:
    | {
        /** `'user'`, `'header:<name>'` or `'custom:<name>'`: its value names the tier. */
        by: string
        /** Tier name to limit: `{ limit, window? }` or `{ rate }`, with an optional `burst`. */
        values: {
          [tier: string]: {
            limit?: number | undefined
            window?: string | number | undefined
            rate?: string | undefined
            burst?: number | undefined
          }
        }
        /** The tier of a request whose tier is absent or unknown. */
        default?: string | undefined
      }
    | undefined
  /**
   * The settings of an `algorithm: 'adaptive'` rule (required for it, refused for the others):
   * the latency it watches and the bounds of its limit on requests in flight.
   */
  adaptive?:
    | {
        /** The latency percentile watched (default 99). */
        percentile?: number | undefined
        /** `'250ms'`: keep the percentile under this; absent: follow the measured baseline. */
        target?: string | number | undefined
        /** Without a target: how far above the baseline the percentile may go (default 1.5). */
        tolerance?: number | undefined
        /** How often the limit moves (default `'10s'`). */
        window?: string | number | undefined
        /** Bounds and start of the limit on requests in flight (defaults 1, 1000, 20). */
        minLimit?: number | undefined
        maxLimit?: number | undefined
        initialLimit?: number | undefined
        /** Share of each computed move taken (default 0.5). */
        smoothing?: number | undefined
        /** Largest fall and rise per window, as fractions of the limit (defaults 0.5 and 1). */
        maxDecrease?: number | undefined
        maxIncrease?: number | undefined
        /** Responses a window needs before the limit moves (default 20). */
        minSamples?: number | undefined
        /** Share of the limit kept for clients within their fair share (default 0.2). */
        reserve?: number | undefined
        /** A gate shared with the adaptive rules of the same name (same settings and key). */
        gate?: string | undefined
        /** `'background'`: shed first (never takes the reserve); default `'normal'`. */
        priority?: 'normal' | 'background' | undefined
      }
    | undefined
}

export const DEFAULT_KEY: readonly KeyPart[] = Object.freeze(['ip'])
export const EVERYTHING: RuleMatch = Object.freeze({})

/** The check of each field of a rule, by field name (a type, not an interface: checkFields takes a record). */
type RuleFields = {
  id: Field<string>
  description: Field<string>
  deny: typeof deny
  allow: typeof allow
  match: typeof match
  key: typeof key
  fallbackKey: Field<FallbackKey>
  limit: Field<number>
  window: Field<number>
  rate: typeof rate
  algorithm: Field<RuleAlgorithm>
  burst: Field<number>
  cost: typeof cost
  onLimit: typeof onLimit
  shadow: typeof boolean
  ban: typeof ban
  count: typeof count
  tiers: typeof tiers
  adaptive: typeof adaptive
}

export const ruleFields: RuleFields = {
  id: (value: unknown, c: Checker): string | Bad =>
    typeof value === 'string' && RULE_ID.test(value) ? value : c.expected(E.id, value),
  description: (value: unknown, c: Checker): string | Bad => {
    if (typeof value !== 'string') return c.expected(E.description, value)
    return value.length <= 1000
      ? value
      : c.expected('a description of at most 1000 characters', value)
  },
  deny,
  allow,
  match,
  key,
  fallbackKey: oneOf(['ip', 'skip', 'shared'], E.fallbackKey),
  limit: positiveInt,
  window: duration,
  rate,
  algorithm: oneOf(RULE_ALGORITHM_NAMES, E.algorithm),
  burst: positiveInt,
  cost,
  onLimit,
  shadow: boolean,
  ban,
  count,
  tiers,
  adaptive,
} satisfies Record<keyof RuleInput, Field<unknown>>
