/**
 * Fastify 5 plugin for Floodgate: `await app.register(rateLimit, { rules })`.
 * @module @floodgate/fastify
 */
import './augment.js'
import { rateLimit } from './plugin.js'

export { rateLimit, type FastifyRateLimitOptions, type RouteRateLimit } from './plugin.js'
export default rateLimit
