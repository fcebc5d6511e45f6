import type { RateLimitInfo } from '@floodgate/core/http'

declare global {
  // Express's own extension point: @types/express-serve-static-core's Request extends it.
  // eslint-disable-next-line @typescript-eslint/no-namespace
  namespace Express {
    interface Request {
      /**
       * The Floodgate decision on this request: limit, remaining, resetMs and the whole
       * Decision. Set by `rateLimit` before the next handler (and before `onRejected`); absent
       * when no Floodgate mount judged the request.
       */
      rateLimit?: RateLimitInfo
    }
  }
}
