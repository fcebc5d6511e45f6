/**
 * Fastify 5 plugin for Floodgate: `await app.register(rateLimit, { rules })`.
 * @module @floodgate/fastify
 */
import './augment.js'
import { rateLimit } from './plugin.js'

export { rateLimit, type FastifyRateLimitOptions, type RouteRateLimit } from './plugin.js'
export type { RateLimitInfo } from '@floodgate/core/http'
export default rateLimit

// What an application needs from core, so installing this adapter alone is enough under
// pnpm's strict layout: createLimiter, MemoryStore, the rule sources, the rule and decision
// types, the errors.
export * from '@floodgate/core'
