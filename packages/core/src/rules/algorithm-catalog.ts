import type { Algorithm, AlgorithmName } from '../algorithms/algorithm.js'
import { tokenBucket } from '../algorithms/token-bucket.js'

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

// The algorithm modules that exist so far. Until every module lands, the ones missing here
// fall back to CANNOT_RESERVE below for validation, and cannot be compiled.
const IMPLEMENTED: ReadonlyMap<AlgorithmName, Algorithm> = new Map<AlgorithmName, Algorithm>(
  [tokenBucket].map((a) => [a.name, a]),
)

// Read from each Algorithm's `canReserve` once its module exists; this list only covers the
// algorithms not yet implemented, so there is one place to delete when they are.
const CANNOT_RESERVE: ReadonlySet<AlgorithmName> = new Set([
  'sliding-window-counter',
  'concurrency',
])

/** Whether a refused request can reserve capacity (needed by the `queue` action). */
export function canReserve(name: AlgorithmName): boolean {
  return IMPLEMENTED.get(name)?.canReserve ?? !CANNOT_RESERVE.has(name)
}

/** The algorithm object for a name, or `undefined` when core does not ship it yet. */
export function findAlgorithm(name: AlgorithmName): Algorithm | undefined {
  return IMPLEMENTED.get(name)
}
