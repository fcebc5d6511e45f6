/**
 * `@floodgate/core/http`: the HTTP enforcement flow, option handling and header formatting
 * shared by the Express, Fastify and Koa adapters, for anyone writing an adapter for another
 * framework. Applications use an adapter instead.
 * @module @floodgate/core/http
 */
export {
  validateAdapterOptions,
  validateCost,
  ADAPTER_OPTION_KEYS,
  LIMITER_OPTION_KEYS,
  PEER_OPTION_HINTS,
  type AdapterOptions,
  type AdapterLimiterOptions,
  type ProblemDetails,
  type Rejection,
  type ResolvedAdapterOptions,
  type RouteCost,
} from './adapter-options.js'
export { handlerAnswer, ignoreSettlement, isPromiseLike } from './app-answers.js'
export { CHECKED_BY, doubleCountGuard } from './double-count-guard.js'
export {
  appendExposeHeaders,
  EXPOSE_HEADERS,
  exposedHeaderNames,
  checkExposeHeaders,
} from './expose-headers.js'
export { firstCheck, originLength, pathOf, prepareMount, type Mount } from './mount.js'
export {
  defaultOutcome,
  enforce,
  writeProblem,
  SHADOW_HEADER,
  type EnforceSettings,
  type EnforcingLimiter,
  type HttpIo,
} from './enforce.js'
export { PROBLEM_CONTENT_TYPE, problemDetails, serializedProblem } from './problem-details.js'
export { isLimiter, resolveLimiter, type LimiterInput } from './resolve-limiter.js'
export { routeCost } from './route-cost.js'
export { silentWarn, warnOnce, type WarnOnce } from './warn-once.js'
export { clientGone, type ConnectionSocket } from './client-gone.js'
export { missingAddressWarning, proxyWarnings, type ProxyTrust } from './proxy-warnings.js'
export { rateLimitInfo, type RateLimitInfo } from './rate-limit-info.js'
export type { RuleInput } from '../rules/schema.js'
export {
  draft7Fields,
  epochResetSeconds,
  formatHeaders,
  HEADER_FORMATS,
  retryAfterSeconds,
  type FormatHeadersOptions,
  type HeaderFormat,
  type HeaderPair,
} from './headers.js'
export type { HeaderBag, RequestFacts } from '../request-facts.js'
export type { CompiledRule, CompiledRules } from '../rules/compiled-rules.js'
export { canonicalPath } from '../rules/canonical-path.js'
export {
  compileKey,
  type KeyBuilder,
  type KeyBuilderFailed,
  type KeyBuilders,
  type KeyFn,
} from '../keys/build-key.js'
export type {
  Decision,
  DecisionAction,
  DecisionReason,
  DecisionStatus,
  RuleOutcome,
} from '../decision.js'
export { ipKey } from '../keys/ip-key.js'
export { scopeLogger } from '../logger.js'
