import type { Limiter } from '@floodgate/core'
import type { CountersSnapshot, DecisionCounts } from '@floodgate/core/metrics'
import {
  checkIntInRange,
  checkKnownKeys,
  checkMethods,
  checkObject,
  optionError,
} from '@floodgate/core/options'

/** The `outcome` label values of a rule's decisions, in the order they are exported. */
export const RULE_OUTCOMES = [
  'allowed',
  'rejected',
  'queued',
  'dropped',
  'shadow_rejected',
  'failed_open',
] as const

/** What happened to a request under one rule. */
export type RuleOutcomeLabel = (typeof RULE_OUTCOMES)[number]

/** The `outcome` label values of requests (a shadow rule never decides a request). */
export const REQUEST_OUTCOMES = ['allowed', 'rejected', 'queued', 'dropped', 'failed_open'] as const

/** What happened to a request. */
export type RequestOutcomeLabel = (typeof REQUEST_OUTCOMES)[number]

/**
 * The `reason` label values of requests decided before any rule counted them: the client is on
 * a deny list (refused, also counted as `rejected`), on an allow list (passed, also `allowed`),
 * or no rule matched the request (`allowed`, or `rejected` under `unmatched: 'reject'`).
 */
export const UNCOUNTED_REASONS = ['deny_list', 'allow_list', 'unmatched'] as const

/** Why a request was decided without counting. */
export type UncountedReasonLabel = (typeof UNCOUNTED_REASONS)[number]

const REASON_FIELD: Record<UncountedReasonLabel, keyof DecisionCounts> = {
  deny_list: 'denied',
  allow_list: 'allowListed',
  unmatched: 'unmatched',
}

/**
 * A count read from the source as a counter's value; undefined when it is not one (NaN,
 * negative or infinite), so it is left out. A source other than a limiter of ours may send
 * anything, and prom-client throws on a negative or infinite increment: thrown in a collect,
 * it fails the registry's whole scrape, the application's own metrics with it.
 */
export function countValue(n: number): number | undefined {
  return Number.isFinite(n) && n >= 0 ? n : undefined
}

/** The requests decided without counting for one reason; undefined when not a count. */
export function uncountedOf(
  total: Readonly<DecisionCounts>,
  reason: UncountedReasonLabel,
): number | undefined {
  return countValue(total[REASON_FIELD[reason]])
}

/** The `rule` label of the rules past `maxRules`, counted together. */
export const OTHER_RULES = '_other'

/** The default cap on distinct `rule` label values. */
export const DEFAULT_MAX_RULES = 50

const FIELD: Record<RuleOutcomeLabel, keyof DecisionCounts> = {
  allowed: 'allowed',
  rejected: 'rejected',
  queued: 'queued',
  dropped: 'dropped',
  shadow_rejected: 'shadowRejected',
  failed_open: 'failedOpen',
}

/** The count of one outcome in a rule's (or the total) counts; undefined when not a count. */
export function countOf(
  counts: Readonly<DecisionCounts>,
  outcome: RuleOutcomeLabel,
): number | undefined {
  return countValue(counts[FIELD[outcome]])
}

/** Two counts added; NaN (left out) when either is not a count, never a sum hiding one. */
function addCounts(a: number, b: number): number {
  return countValue(a) === undefined || countValue(b) === undefined ? NaN : a + b
}

/**
 * Rule ids as label values, at most `max` distinct ones: the first `max` rule ids seen keep
 * their own label for the life of the exporter, later ones share {@link OTHER_RULES}. Rule ids
 * come from operators, so a rule set that grows cannot grow the number of series without end.
 */
export class RuleLabels {
  private readonly labels = new Map<string, string>()

  constructor(private readonly max: number) {}

  of(ruleId: string): string {
    const known = this.labels.get(ruleId)
    if (known !== undefined) return known
    if (this.labels.size >= this.max) return OTHER_RULES
    this.labels.set(ruleId, ruleId)
    return ruleId
  }

  /**
   * Whether the rule is past the cap (counted under {@link OTHER_RULES}). A rule whose own id
   * is `_other` and that kept its label is not.
   */
  capped(ruleId: string): boolean {
    this.of(ruleId)
    return !this.labels.has(ruleId)
  }
}

/** Sum per-rule counts by label, so the rules past the cap add up under {@link OTHER_RULES}. */
export function countsByLabel(
  snapshot: CountersSnapshot,
  labels: RuleLabels,
): Map<string, DecisionCounts> {
  const out = new Map<string, DecisionCounts>()
  for (const [id, c] of snapshot.byRule) {
    const label = labels.of(id)
    const into = out.get(label)
    if (into === undefined) {
      out.set(label, { ...c })
      continue
    }
    // Every field, so a count core adds later is summed too, not left at its first rule's value.
    for (const field of Object.keys(c) as (keyof DecisionCounts)[]) {
      into[field] = addCounts(into[field], c[field])
    }
  }
  return out
}

/** In-flight requests per label (rules past the cap add up); a label with a bad count is left out. */
export function inFlightByLabel(
  snapshot: CountersSnapshot,
  labels: RuleLabels,
): Map<string, number> {
  const sums = new Map<string, number>()
  for (const [id, n] of snapshot.inFlight) {
    const label = labels.of(id)
    sums.set(label, addCounts(sums.get(label) ?? 0, n))
  }
  const out = new Map<string, number>()
  for (const [label, n] of sums) if (countValue(n) !== undefined) out.set(label, n)
  return out
}

/**
 * What an exporter reads from a limiter (any `Limiter`, whatever its request type). `rules` and
 * `adaptive` are read when present, for the adaptive rules' gauges.
 */
export type MetricsSource = Pick<Limiter, 'counters' | 'observe'> &
  Partial<Pick<Limiter, 'rules' | 'adaptive'>>

/** One adaptive rule's live figures, as the gauges export them. */
export interface AdaptiveFigures {
  /** The limit on requests in flight. */
  readonly limit: number
  /** The watched latency percentile of the last window, in seconds; undefined before one. */
  readonly latencySeconds: number | undefined
}

/**
 * The adaptive rules' limits and latency percentiles, by label. A rule past the label cap is
 * left out: limits of different rules do not add up.
 */
export function adaptiveByLabel(
  limiter: MetricsSource,
  labels: RuleLabels,
): Map<string, AdaptiveFigures> {
  const out = new Map<string, AdaptiveFigures>()
  if (typeof limiter.adaptive !== 'function' || limiter.rules === undefined) return out
  for (const rule of limiter.rules) {
    if (rule.algorithm !== 'adaptive') continue
    const state = limiter.adaptive(rule.id)
    const label = labels.of(rule.id)
    if (state === undefined || labels.capped(rule.id) || out.has(label)) continue
    // A limit or latency that is not a number of its kind is left out, like a bad count.
    if (countValue(state.limit) === undefined) continue
    const ms = state.percentileMs
    out.set(label, {
      limit: state.limit,
      latencySeconds: ms === undefined ? undefined : durationSeconds(ms),
    })
  }
  return out
}

/**
 * A duration the limiter observed, in milliseconds, as seconds for a histogram; undefined when
 * it is not a duration (NaN, negative or infinite), so it is left out. A source other than a
 * limiter of ours may send anything, and one NaN would make a histogram's sum NaN for good.
 */
export function durationSeconds(ms: number): number | undefined {
  return Number.isFinite(ms) && ms >= 0 ? ms / 1000 : undefined
}

/** Check the limiter argument: a clear error when it is something else. */
export function checkLimiter(limiter: unknown): asserts limiter is MetricsSource {
  checkMethods('limiter', limiter, ['counters', 'observe'])
}

/** Check a list of histogram bucket bounds: finite, positive and increasing. */
export function checkBuckets(name: string, v: unknown, def: readonly number[]): number[] {
  if (v === undefined) return [...def]
  const ok =
    Array.isArray(v) &&
    v.length > 0 &&
    v.every(
      (b, i) =>
        typeof b === 'number' &&
        Number.isFinite(b) &&
        b > 0 &&
        (i === 0 || b > (v[i - 1] as number)),
    )
  if (!ok) throw optionError(name, 'a non-empty list of increasing positive numbers (seconds)', v)
  return [...(v as number[])]
}

/** The options both exporters share. */
export interface CommonMetricsOptions {
  /**
   * Distinct `rule` label values at most; the rules past it are counted under `rule="_other"`.
   * @default 50
   */
  readonly maxRules?: number | undefined
  /**
   * Bucket upper bounds of the queue wait histogram, in seconds.
   * @default [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30]
   */
  readonly queueWaitBuckets?: readonly number[] | undefined
  /**
   * Bucket upper bounds of the store latency histogram, in seconds.
   * @default [0.0001, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1]
   */
  readonly storeLatencyBuckets?: readonly number[] | undefined
}

export const DEFAULT_QUEUE_WAIT_BUCKETS = [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30] as const
export const DEFAULT_STORE_LATENCY_BUCKETS = [
  0.0001, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1,
] as const

/** The checked common options. */
export interface CheckedCommonOptions {
  readonly maxRules: number
  readonly queueWaitBuckets: number[]
  readonly storeLatencyBuckets: number[]
}

/** Validate the options object (`known`: every setting it may have) and the common settings. */
export function checkCommonOptions(
  options: unknown,
  known: readonly string[],
): CheckedCommonOptions {
  checkObject('options', options)
  const o = (options ?? {}) as CommonMetricsOptions
  checkKnownKeys('options', o, ['maxRules', 'queueWaitBuckets', 'storeLatencyBuckets', ...known])
  return {
    maxRules: checkIntInRange('options.maxRules', o.maxRules, DEFAULT_MAX_RULES, 1, 10_000),
    queueWaitBuckets: checkBuckets(
      'options.queueWaitBuckets',
      o.queueWaitBuckets,
      DEFAULT_QUEUE_WAIT_BUCKETS,
    ),
    storeLatencyBuckets: checkBuckets(
      'options.storeLatencyBuckets',
      o.storeLatencyBuckets,
      DEFAULT_STORE_LATENCY_BUCKETS,
    ),
  }
}

/** What an exporter returns: stop it, and its metrics leave the registry or meter. */
export interface MetricsExporter {
  /** Unsubscribe from the limiter and remove the metrics. Later calls do nothing. */
  close(): void
}
