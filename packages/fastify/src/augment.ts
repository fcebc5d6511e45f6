import type { RouteRateLimit } from './plugin.js'

declare module 'fastify' {
  interface FastifyContextConfig {
    /** Floodgate per-route settings; `false` exempts the route. */
    rateLimit?: RouteRateLimit | false
  }
}
