/**
 * @module @floodgate/core
 * Algorithms, rules, keys, stores and the limiter engine of Floodgate. Framework adapters
 * (`@floodgate/express`, `@floodgate/fastify`, `@floodgate/koa`) and the Redis store build on it.
 */

// Algorithms
export type {
  Algorithm,
  AlgorithmName,
  AlgorithmParams,
  AlgorithmResult,
} from './algorithms/algorithm.js'
export { EPSILON, newResult } from './algorithms/algorithm.js'
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
} from './algorithms/index.js'
export { CONCURRENCY_RETRY_AFTER_MS } from './algorithms/concurrency.js'

// Requests and decisions
export type { HeaderBag, RequestFacts } from './request-facts.js'
export type { Decision, DecisionAction, RuleOutcome } from './decision.js'
export type { FormatHeadersOptions, HeaderDraft, HeaderPair } from './http/headers.js'
export { formatHeaders, retryAfterSeconds } from './http/headers.js'

// Rules
export type { FallbackKey, KeyPart, OverLimit, Rule, RuleMatch } from './rules/rule.js'
export type { CompiledRule, CompiledRules } from './rules/compiled-rules.js'
export type { RulesSource } from './rules/sources/rules-source.js'
export type { RuleInput, RulesDocument } from './rules/schema.js'
export {
  MAX_DURATION_MS,
  parseRule,
  parseRules,
  parseRulesDocument,
  ruleSchema,
  rulesSchema,
} from './rules/schema.js'
export type { CompileRulesOptions } from './rules/compile-rules.js'
export { compileRules, stateIdOf } from './rules/compile-rules.js'
export { staticRules } from './rules/sources/static-rules.js'
export type { FileRulesOptions, FileRulesSource } from './rules/sources/file-rules.js'
export { fileRules } from './rules/sources/file-rules.js'
export type { HttpRulesOptions, HttpRulesSource } from './rules/sources/http-rules.js'
export { httpRules } from './rules/sources/http-rules.js'
export { canonicalPath } from './rules/canonical-path.js'
export { parseDuration } from './duration.js'

// Keys
export type { KeyBuilder, KeyBuilders, KeyFn } from './keys/build-key.js'
export { compileKey } from './keys/build-key.js'
export { ipKey } from './keys/ip-key.js'
export { MAX_KEY_LENGTH, boundKey } from './keys/hash-key.js'

// Stores
export type { ConsumeEntry, RefundEntry, Store } from './stores/store.js'
export type { MemoryStoreOptions } from './stores/memory-store.js'
export { MemoryStore } from './stores/memory-store.js'

// Limiter
export type { Limiter, LimiterOptions } from './limiter-types.js'
export { createLimiter } from './limiter.js'
export type { CountersSnapshot, DecisionCounts } from './limiter-counters.js'

// Infrastructure
export type { Clock } from './clock.js'
export { systemClock, turnClock } from './clock.js'
export type { Logger } from './logger.js'
export { silentLogger } from './logger.js'
export type { ErrorCode } from './errors.js'
export { FloodgateError, OptionsError, RulesValidationError, errorCodes } from './errors.js'

// HTTP adapters' shared flow (used by @floodgate/express, /fastify, /koa)
export * from './http/index.js'
export { scopeLogger } from './logger.js'

// Adapter toolkit: the HTTP flow every framework adapter shares
export * from './http/index.js'
