import type { Algorithm, AlgorithmName } from '../algorithms/algorithm.js'
import { concurrency } from '../algorithms/concurrency.js'
import { MAX_EXACT_SCALED, exactRate } from '../algorithms/exact-rate.js'
import { algorithms } from '../algorithms/registry.js'
import type { RuleAlgorithm } from './rule.js'

/** Every algorithm a rule may name, in the order the docs list them. */
export const ALGORITHM_NAMES = [
  'token-bucket',
  'gcra',
  'fixed-window',
  'sliding-window-log',
  'sliding-window-counter',
  'leaky-bucket',
  'concurrency',
] as const
const namesAreAlgorithms: readonly AlgorithmName[] = ALGORITHM_NAMES
void namesAreAlgorithms

/** Every algorithm a rule may name: core's, and `'adaptive'`, which the limiter decides itself. */
export const RULE_ALGORITHM_NAMES: readonly [...typeof ALGORITHM_NAMES, 'adaptive'] = [
  ...ALGORITHM_NAMES,
  'adaptive',
] as const

/** Algorithms whose capacity is `burst` rather than `limit`. */
export const BUCKET_ALGORITHMS: ReadonlySet<RuleAlgorithm> = new Set<RuleAlgorithm>([
  'token-bucket',
  'gcra',
  'leaky-bucket',
])

/** The largest limit a sliding-window-log rule may have: it keeps one timestamp per unit. */
export const MAX_SLIDING_LOG_LIMIT = 10_000

/**
 * Whether `limit` is more than the algorithm can keep state for (a sliding-window-log keeps
 * one timestamp per unit). One check for every place a limit comes from: a rule, a tier, a
 * limit function's answer.
 */
export function limitTooLarge(algorithm: RuleAlgorithm, limit: number): boolean {
  return algorithm === 'sliding-window-log' && limit > MAX_SLIDING_LOG_LIMIT
}

/** What {@link bucketOutOfRange} found: the field to name and what it expects. */
export interface RangeProblem {
  readonly field: 'burst' | 'maxWait'
  readonly expected: string
}

/**
 * Whether a bucket's numbers are past the range its arithmetic is exact in: it counts in
 * steps of `1 / scale` unit (`scale = windowMs / gcd(limit, windowMs)`), and keeps at most
 * 2^50 of them exactly; a queued request's debt adds up to `maxWaitMs` of drain on top of the
 * burst. One check for every place a limit comes from: a rule, a tier, a limit function's
 * answer. Undefined when within range (and for the algorithms that are not buckets).
 */
export function bucketOutOfRange(
  algorithm: RuleAlgorithm,
  limit: number,
  windowMs: number,
  burst: number,
  maxWaitMs: number,
): RangeProblem | undefined {
  if (!BUCKET_ALGORITHMS.has(algorithm)) return undefined
  const { scale, perMs } = exactRate(limit, windowMs)
  const most = Math.floor(MAX_EXACT_SCALED / scale)
  const rate = `${limit} per ${windowMs} ms`
  const why = `${algorithm} at ${rate} counts in steps of 1/${scale} unit, exact up to 2^50 steps`
  if (burst > most) {
    return { field: 'burst', expected: `a burst of at most ${most}: ${why}` }
  }
  const room = Math.floor((MAX_EXACT_SCALED - burst * scale) / perMs)
  if (maxWaitMs > room) {
    return {
      field: 'maxWait',
      expected: `a maxWait of at most ${room} ms with a burst of ${burst}: a queued request's debt adds maxWait of refill to the burst, and ${why}`,
    }
  }
  return undefined
}

/** Whether a refused request can reserve capacity (needed by the `queue` action). */
export function canReserve(name: RuleAlgorithm): boolean {
  return name !== 'adaptive' && algorithms[name].canReserve
}

/**
 * The algorithm object for a name, or `undefined` when core does not ship it. An adaptive rule
 * is decided by the limiter on this host, never by a store; it is compiled as `concurrency`
 * (requests in flight, given back when they end), so every path that holds and returns
 * concurrency slots holds and returns its slots too.
 */
export function findAlgorithm(name: RuleAlgorithm): Algorithm | undefined {
  if (name === 'adaptive') return concurrency
  return Object.hasOwn(algorithms, name) ? algorithms[name] : undefined
}
