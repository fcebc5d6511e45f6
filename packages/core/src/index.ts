/**
 * @module @floodgate/core
 * The Floodgate rate limiter: rules as data, the limiter that decides allow, queue or refuse,
 * the in-memory store, and the rule sources. Framework adapters (`@floodgate/express`,
 * `@floodgate/fastify`, `@floodgate/koa`) and `@floodgate/redis` build on it.
 *
 * Further entry points serve people who extend Floodgate rather than use it:
 * `@floodgate/core/http` (adapter authors), `@floodgate/core/algorithms` (store authors),
 * `@floodgate/core/rules` (tools for rules as data), `@floodgate/core/metrics` (metrics
 * exporters), `@floodgate/core/options` (named option checks); `@floodgate/core/testing` holds
 * the suites adapters and stores are tested with.
 */

// The limiter
export { createLimiter } from './limiter.js'
export type { Limiter, LimiterOptions, RequestOutcome } from './limiter-types.js'
export type { Decision } from './decision.js'
export type { ClientKey } from './keys/build-key.js'
export type { ClientState } from './limiter-client-state.js'

// Rules and where they come from
export type { Rule } from './rules/rule.js'
export { parseRules, type RuleInput } from './rules/schema.js'
export type { RulesSource } from './rules/sources/rules-source.js'
export { staticRules } from './rules/sources/static-rules.js'
export { fileRules, type FileRulesOptions } from './rules/sources/file-rules.js'
export { httpRules, type HttpRulesOptions } from './rules/sources/http-rules.js'

// Stores
export type { Store } from './stores/store.js'
export { MemoryStore, type MemoryStoreOptions } from './stores/memory-store.js'

// Time, logs and errors
export type { Clock } from './clock.js'
export type { Logger } from './logger.js'
export type { ErrorCode } from './errors.js'
export { FloodgateError, OptionsError, RulesValidationError } from './errors.js'
