import type { RateLimitInfo } from '@floodgate/core/http'

declare module 'koa' {
  interface DefaultState {
    /**
     * The Floodgate decision on this request: limit, remaining, resetMs and the whole Decision.
     * Set by `rateLimit` before `next()` (and before `onRejected`); absent when no Floodgate
     * mount judged the request.
     */
    rateLimit?: RateLimitInfo
  }
}
