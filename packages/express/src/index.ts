/**
 * Express middleware for Floodgate: `app.use(rateLimit(rules, options))`.
 * @module @floodgate/express
 */
import './augment.js'

export { rateLimit, type ExpressRateLimitOptions, type RateLimitMiddleware } from './middleware.js'
export type { RateLimitInfo } from '@floodgate/core/http'

// What an application needs from core, so installing this adapter alone is enough under
// pnpm's strict layout: createLimiter, MemoryStore, the rule sources, the rule and decision
// types, the errors.
export * from '@floodgate/core'
