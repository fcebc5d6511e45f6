import { EPSILON, unitsLeft, type Algorithm } from './algorithm.js'

// State layout: [inFlight]. All zeros: no request in flight.
const IN_FLIGHT = 0

/**
 * `retryAfterMs` of a refused concurrency request. When a slot frees up depends on how long
 * the requests in flight take, which the limiter cannot know; one second is a conservative
 * hint that keeps `Retry-After` meaningful (a refusal never says "retry in 0 s").
 */
export const CONCURRENCY_RETRY_AFTER_MS = 1000

/**
 * Concurrency: at most `limit` units in flight per key. `consume` takes `cost` slots and
 * `refund` gives them back when the response ends (the limiter's `release`). Time plays no
 * part: `resetMs` is 0 and a held slot never expires here; stores decide how long a lease
 * may live before it is presumed lost.
 *
 * Pro: limits what actually hurts a server (parallel work: open connections, DB sessions,
 * CPU-heavy handlers) regardless of how long each request takes.
 * Con: needs a reliable release (a crashed worker leaks slots until the store expires
 * them); the retry hint is a guess ({@link CONCURRENCY_RETRY_AFTER_MS}); no reservations.
 * Pick it for slow or expensive endpoints (exports, reports, uploads), usually beside a
 * rate rule.
 */
export const concurrency: Algorithm = {
  name: 'concurrency',
  canReserve: false,
  stateSize: () => 1,
  consume(state, o, p, cost, _nowMs, _maxWaitMs, commit, out) {
    const inFlight = state[o + IN_FLIGHT]!
    const after = inFlight + cost
    out.limit = p.limit
    out.waitMs = 0
    out.resetMs = 0
    if (after <= p.limit + EPSILON) {
      out.allowed = true
      out.retryAfterMs = 0
      out.remaining = unitsLeft(after, p.limit)
      if (commit) state[o + IN_FLIGHT] = after
    } else {
      out.allowed = false
      out.retryAfterMs = CONCURRENCY_RETRY_AFTER_MS
      out.remaining = unitsLeft(inFlight, p.limit)
    }
  },
  refund(state, o, _p, cost) {
    const left = state[o + IN_FLIGHT]! - cost
    // Snap float residue (0.1 + 0.2 - 0.3) to zero so the key can become idle.
    state[o + IN_FLIGHT] = left > EPSILON ? left : 0
  },
  idleAtMs(state, o, _p, nowMs) {
    return state[o + IN_FLIGHT]! <= EPSILON ? nowMs : Number.POSITIVE_INFINITY
  },
}
