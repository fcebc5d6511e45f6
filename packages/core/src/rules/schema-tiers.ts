import type { RuleAlgorithm, RuleTier } from './rule.js'
import {
  BUCKET_ALGORITHMS,
  MAX_SLIDING_LOG_LIMIT,
  bucketOutOfRange,
  limitTooLarge,
} from './algorithm-catalog.js'
import { E, type TierInput } from './schema-fields.js'
import type { Checker } from './schema-issues.js'

export interface Capacity {
  readonly algorithm: RuleAlgorithm
  /** Undefined when the rule's cost failed its own check. */
  readonly cost: number | undefined
}

/**
 * One tier completed: its window defaults to the rule's, its burst to its limit. Problems of
 * the tier are named under `tiers.values.<name>` (`at`); a cost it could never pass under the
 * rule's `cost`, or a queue wait its bucket cannot keep exactly (`rule`).
 */
export function resolveTier(
  at: Checker,
  rule: Checker,
  t: TierInput,
  r: Capacity & { readonly windowMs: number | undefined; readonly maxWaitMs: number },
): RuleTier | undefined {
  const concurrency = r.algorithm === 'concurrency'
  let limit = t.limit
  let windowMs = t.window ?? r.windowMs
  if (t.rate !== undefined) {
    if (t.limit !== undefined || t.window !== undefined) {
      at.expected('either rate, or limit and window, not both', t.rate.text, ['rate'])
      return undefined
    }
    limit = t.rate.limit
    windowMs = t.rate.windowMs
  }
  if (concurrency && (t.window !== undefined || t.rate !== undefined)) {
    at.expected(
      "no window for algorithm 'concurrency' (set limit: the requests in flight)",
      t.window ?? t.rate?.text,
      [t.rate !== undefined ? 'rate' : 'window'],
    )
    return undefined
  }
  if (limit === undefined) {
    at.expected(E.posInt, undefined, ['limit'])
    return undefined
  }
  if (windowMs === undefined && !concurrency) {
    at.expected(`${E.duration} (the tier's, or the rule's window)`, undefined, ['window'])
    return undefined
  }
  const bucket = BUCKET_ALGORITHMS.has(r.algorithm)
  if (t.burst !== undefined && !bucket) {
    at.expected(
      `no burst for algorithm '${r.algorithm}' (only token-bucket, gcra and leaky-bucket have one)`,
      t.burst,
      ['burst'],
    )
    return undefined
  }
  const burst = bucket ? (t.burst ?? limit) : limit
  if (limitTooLarge(r.algorithm, limit)) {
    at.expected(
      `a limit of at most ${MAX_SLIDING_LOG_LIMIT} for sliding-window-log, which stores a timestamp per request (sliding-window-counter scales to any limit)`,
      limit,
      [t.rate !== undefined ? 'rate' : 'limit'],
    )
  }
  if (r.cost !== undefined && r.cost > burst) {
    rule.expected(
      `a cost of at most the rule's capacity (${burst}); a dearer request could never pass`,
      r.cost,
      ['cost'],
    )
  }
  const range = bucketOutOfRange(r.algorithm, limit, windowMs ?? 0, burst, r.maxWaitMs)
  if (range?.field === 'burst') {
    const field = t.burst !== undefined ? 'burst' : t.rate !== undefined ? 'rate' : 'limit'
    at.expected(range.expected, field === 'rate' ? t.rate!.text : burst, [field])
    return undefined
  }
  if (range) {
    rule.expected(range.expected, r.maxWaitMs, ['onLimit', 'maxWait'])
    return undefined
  }
  return Object.freeze({ limit, windowMs: windowMs ?? 0, burst })
}
