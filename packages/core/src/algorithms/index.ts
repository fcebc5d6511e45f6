/**
 * `@floodgate/core/algorithms`: what a store author needs to decide with Floodgate's
 * algorithms on their own storage (the Redis store is built on it). An application never
 * needs this entry point: `createLimiter` and the stores pick the algorithm a rule names.
 * @module @floodgate/core/algorithms
 */
export type { Algorithm, AlgorithmName, AlgorithmParams, AlgorithmResult } from './algorithm.js'
export { EPSILON, STATE_TIME_HORIZON_MS, newResult } from './algorithm.js'
export {
  algorithms,
  concurrency,
  fixedWindow,
  gcra,
  getAlgorithm,
  leakyBucket,
  slidingWindowCounter,
  slidingWindowLog,
  tokenBucket,
} from './registry.js'
export { CONCURRENCY_RETRY_AFTER_MS } from './concurrency.js'
export { MAX_EXACT_SCALED, exactRate, type ExactRate } from './exact-rate.js'
export type { ConsumeEntry, RefundEntry, StateEntry, Store } from '../stores/store.js'
export { checkChargeable } from '../stores/chargeable.js'
export type { CompiledBan, CompiledRule } from '../rules/compiled-rules.js'
export { stateIdOf } from '../rules/compile-rules.js'
export { MAX_KEY_LENGTH, boundKey, keyDigest } from '../keys/hash-key.js'
export { scopeLogger } from '../logger.js'
export { systemClock, turnClock, type Clock } from '../clock.js'
export { SpaceSaving, type HeavyHitter } from '../space-saving.js'
