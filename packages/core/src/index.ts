/**
 * @module @floodgate/core
 * The Floodgate rate limiter: rules as data, the limiter that decides allow, queue or refuse,
 * the in-memory store, and the rule sources. Framework adapters (`@floodgate/express`,
 * `@floodgate/fastify`, `@floodgate/koa`) and `@floodgate/redis` build on it.
 *
 * Two further entry points serve people who extend Floodgate rather than use it:
 * `@floodgate/core/http` (adapter authors) and `@floodgate/core/algorithms` (store authors);
 * `@floodgate/core/testing` holds the suites adapters and stores are tested with.
 */

// The limiter
export { createLimiter } from './limiter.js'
export type { Limiter, LimiterOptions, RequestOutcome } from './limiter-types.js'
export type { LimitAnswer, LimitFunction, LimitFunctions } from './limiter-limits.js'
export type { Decision, RuleOutcome } from './decision.js'
export type { AccessList } from './lists/access-list.js'
export type { CountersSnapshot, DecisionCounts } from './limiter-counters.js'
export type { LimiterObserver } from './limiter-observer.js'
export type { TopClient, TopClientsOptions, TopClientsQuery } from './limiter-top-clients.js'
export type { KeyBuilders, ClientKey } from './keys/build-key.js'
export type { ClientRuleOptions, ClientState, LimitOptions } from './limiter-client-state.js'

// Rules and where they come from
export type { Rule, RuleBan } from './rules/rule.js'
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
