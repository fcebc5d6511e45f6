import type { Decision } from '../decision.js'

/**
 * What a route handler can read about the limiter's decision on its request: `req.rateLimit`
 * (Express), `request.rateLimit` (Fastify), `ctx.state.rateLimit` (Koa). Also set for a
 * refused request, before `onRejected` runs. Absent when the mount skipped the request.
 */
export interface RateLimitInfo {
  /** The most restrictive enforced rule's limit; 0 when no rule counted the request. */
  readonly limit: number
  /** Units left under that rule. */
  readonly remaining: number
  /** Milliseconds until that rule's quota is fully back. */
  readonly resetMs: number
  /** The whole decision: every rule's outcome, the action, whether it failed open. */
  readonly decision: Decision
}

/**
 * The {@link RateLimitInfo} of a decision.
 *
 * @param decision - the limiter's decision
 * @returns the info handlers read
 */
export function rateLimitInfo(decision: Decision): RateLimitInfo {
  return {
    limit: decision.limit,
    remaining: decision.remaining,
    resetMs: decision.resetMs,
    decision,
  }
}
