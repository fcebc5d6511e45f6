/**
 * The HTTP enforcement flow and option handling shared by the Express, Fastify and Koa adapters.
 * @module
 */
export {
  validateAdapterOptions,
  validateCost,
  ADAPTER_OPTION_KEYS,
  LIMITER_OPTION_KEYS,
  type AdapterOptions,
  type AdapterLimiterOptions,
  type HeadersOption,
  type ProblemDetails,
  type Rejection,
  type ResolvedAdapterOptions,
  type RouteCost,
} from './adapter-options.js'
export { CHECKED_BY, doubleCountGuard } from './double-count-guard.js'
export {
  appendExposeHeaders,
  EXPOSE_HEADERS,
  exposedHeaderNames,
  checkExposeHeaders,
} from './expose-headers.js'
export { firstCheck, pathOf, prepareMount, type Mount } from './mount.js'
export {
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
export { warnOnce, type WarnOnce } from './warn-once.js'
export type { RuleInput } from '../rules/schema.js'
