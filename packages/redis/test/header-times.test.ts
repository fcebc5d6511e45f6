import fc from 'fast-check'
import { Redis } from 'ioredis'
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest'
import { createLimiter, type Decision } from '@floodgate/core'
import { formatHeaders } from '@floodgate/core/http'
import { createRedisStore, type RedisStore } from '@floodgate/redis'
import { REDIS_URL, deletePrefix, redisAvailable, uniquePrefix } from './helpers/redis.js'

const available = await redisAvailable()
const prefix = uniquePrefix('header-times')

// A RedisStore decides on its own clock (Redis TIME in production; here a function `skewMs`
// away from the host's, so the skew is known). Its durations are Redis's; the epoch reset is the
// host's reading at the decision plus that duration: the instant on the host's clock (the one
// its Date header and its clients go by), not Redis's window edge, which the skew moves.
describe.skipIf(!available)('time headers of a RedisStore decision', () => {
  let admin: Redis
  let local = 0
  let skewMs = 0
  let store: RedisStore

  beforeAll(async () => {
    admin = new Redis(REDIS_URL)
    store = createRedisStore({
      url: REDIS_URL,
      prefix,
      timeSource: () => local + skewMs,
      callTimeoutMs: 10_000,
    })
    await store.ready
  })
  afterEach(() => {
    vi.restoreAllMocks()
  })
  afterAll(async () => {
    await store.close()
    await deletePrefix(admin, prefix)
    admin.disconnect()
  })

  it('X-RateLimit-Reset is the host instant of the decision plus Redis’s duration, whatever the skew and however late the headers', async () => {
    let client = 0
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: -5_000, max: 5_000 }),
        fc.integer({ min: 0, max: 9_999 }),
        fc.integer({ min: 0, max: 1_500 }),
        async (skew, intoWindowMs, tickMs) => {
          skewMs = skew
          // Redis's clock stands intoWindowMs into a 10 s window of its own.
          const redisAt = 1_700_000_040_000 + intoWindowMs
          local = redisAt - skew
          const decidedAt = local
          vi.spyOn(Date, 'now').mockImplementation(() => local)
          const limiter = createLimiter({
            rules: [{ id: 'w', algorithm: 'fixed-window', limit: 1, window: '10s' }],
            store,
            clock: () => local,
            // A loaded machine must not make the decision fail open (it would carry no time).
            decisionTimeoutMs: 10_000,
          })
          // A fresh client per run: its window starts empty.
          client++
          const facts = { method: 'GET', path: '/', ip: `2001:db8:${client}::1`, headers: {} }
          const ask = async (): Promise<Decision> => {
            const d = await limiter.check(facts)
            local += tickMs // the headers are written later than the decision
            return d
          }
          const windowEnd = 1_700_000_050_000 // on Redis's clock
          const first = await ask()
          expect(first.decidedAtMs).toBe(decidedAt)
          expect(first.resetMs).toBe(windowEnd - redisAt)
          const reset = Object.fromEntries(formatHeaders(first, { format: 'legacy' }))
          expect(Number(reset['X-RateLimit-Reset'])).toBe(Math.ceil((windowEnd - skew) / 1000))
          local = decidedAt
          const second = await ask()
          const refused = Object.fromEntries(formatHeaders(second, { format: 'both' }))
          // Durations are Redis's alone: the skew does not move Retry-After.
          expect(refused['Retry-After']).toBe(String(Math.ceil((windowEnd - redisAt) / 1000)))
          expect(Number(refused['X-RateLimit-Reset'])).toBe(Math.ceil((windowEnd - skew) / 1000))
        },
      ),
      { numRuns: 40 },
    )
  })
})
