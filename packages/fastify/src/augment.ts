import type { RateLimitInfo } from '@floodgate/core/http'
import type { RouteRateLimit } from './plugin.js'

declare module 'fastify' {
  interface FastifyContextConfig {
    /** Floodgate per-route settings; `false` exempts the route. */
    rateLimit?: RouteRateLimit | false
  }
  interface FastifyRequest {
    /**
     * The Floodgate decision on this request: limit, remaining, resetMs and the whole
     * Decision. Set by the plugin's hook before the handler (and before `onRejected`); absent
     * when the plugin did not judge the request (an exempt route, `skip`).
     */
    rateLimit?: RateLimitInfo | undefined
  }
}
