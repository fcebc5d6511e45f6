/**
 * Koa middleware for Floodgate: `app.use(rateLimit(rules, options))`.
 * @module @floodgate/koa
 */
export { rateLimit, type KoaRateLimitOptions, type RateLimitMiddleware } from './middleware.js'
