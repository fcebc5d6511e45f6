import type { Algorithm, AlgorithmName } from '../algorithms/algorithm.js'
import { algorithms } from '../algorithms/registry.js'

/** Every algorithm a rule may name, in the order the docs list them. */
export const ALGORITHM_NAMES = [
  'token-bucket',
  'gcra',
  'fixed-window',
  'sliding-window-log',
  'sliding-window-counter',
  'leaky-bucket',
  'concurrency',
] as const satisfies readonly AlgorithmName[]

/** Algorithms whose capacity is `burst` rather than `limit`. */
export const BUCKET_ALGORITHMS: ReadonlySet<AlgorithmName> = new Set([
  'token-bucket',
  'gcra',
  'leaky-bucket',
])

/** The largest limit a sliding-window-log rule may have: it keeps one timestamp per unit. */
export const MAX_SLIDING_LOG_LIMIT = 10_000

/** Whether a refused request can reserve capacity (needed by the `queue` action). */
export function canReserve(name: AlgorithmName): boolean {
  return algorithms[name].canReserve
}

/** The algorithm object for a name, or `undefined` when core does not ship it. */
export function findAlgorithm(name: AlgorithmName): Algorithm | undefined {
  return Object.hasOwn(algorithms, name) ? algorithms[name] : undefined
}
