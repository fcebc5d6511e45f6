import type { Algorithm, AlgorithmName } from './algorithm.js'
import { concurrency } from './concurrency.js'
import { fixedWindow } from './fixed-window.js'
import { gcra } from './gcra.js'
import { leakyBucket } from './leaky-bucket.js'
import { slidingWindowCounter } from './sliding-window-counter.js'
import { slidingWindowLog } from './sliding-window-log.js'
import { tokenBucket } from './token-bucket.js'

/** Every algorithm core ships, by name. */
export const algorithms: Readonly<Record<AlgorithmName, Algorithm>> = {
  'token-bucket': tokenBucket,
  gcra,
  'fixed-window': fixedWindow,
  'sliding-window-log': slidingWindowLog,
  'sliding-window-counter': slidingWindowCounter,
  'leaky-bucket': leakyBucket,
  concurrency,
}

/**
 * The algorithm called `name`.
 *
 * @param name - One of the {@link AlgorithmName}s.
 * @returns The algorithm's functions.
 * @throws TypeError when `name` is not a known algorithm (rules are validated earlier, so
 * this only happens with hand-built params).
 * @example
 * ```ts
 * const tb = getAlgorithm('token-bucket')
 * ```
 */
export function getAlgorithm(name: AlgorithmName): Algorithm {
  const algorithm = Object.hasOwn(algorithms, name) ? algorithms[name] : undefined
  if (algorithm === undefined) throw new TypeError(`unknown algorithm: ${String(name)}`)
  return algorithm
}

export { concurrency, CONCURRENCY_RETRY_AFTER_MS } from './concurrency.js'
export { fixedWindow } from './fixed-window.js'
export { gcra } from './gcra.js'
export { leakyBucket } from './leaky-bucket.js'
export { slidingWindowCounter } from './sliding-window-counter.js'
export { slidingWindowLog } from './sliding-window-log.js'
export { tokenBucket } from './token-bucket.js'
