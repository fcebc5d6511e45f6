// The reference row of the core benchmarks, in a module of its own so that a counted child
// (check-instructions.mjs) loads it without the peers.

// A limit nothing reaches within a run, as in contenders.mjs: 1e9 per 1e9 ms.
const HUGE = 1_000_000_000

/**
 * The reference for check(): a plain synchronous token bucket over a Map, the least a limiter
 * can do per request. Keyed by the request's IP as given (no normalisation), one object per
 * key, a Date.now() per call, a boolean answer. Fed the same request objects as check().
 */
export const plainBucket = {
  name: 'plain token bucket over a Map (reference)',
  sync: true,
  make(keys) {
    const buckets = new Map()
    const perMs = HUGE / HUGE
    const facts = keys.map((ip) => ({ method: 'GET', path: '/api/items', ip, headers: {} }))
    return (i) => {
      const ip = facts[i].ip
      const now = Date.now()
      let b = buckets.get(ip)
      if (b === undefined) {
        b = { tokens: HUGE, lastMs: now }
        buckets.set(ip, b)
      } else {
        b.tokens = Math.min(HUGE, b.tokens + (now - b.lastMs) * perMs)
        b.lastMs = now
      }
      if (b.tokens < 1) return false
      b.tokens -= 1
      return true
    }
  },
}
