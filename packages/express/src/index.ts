/**
 * Express middleware for Floodgate: `app.use(rateLimit(rules, options))`.
 * @module @floodgate/express
 */
export { rateLimit, type ExpressRateLimitOptions, type RateLimitMiddleware } from './middleware.js'
