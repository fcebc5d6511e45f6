import { afterEach, describe, expect, it, vi } from 'vitest'
import { createLimiter, type Logger, type RuleInput } from '@floodgate/core'
import { createRedisStore } from '@floodgate/redis'
import { REDIS_URL, adminConnection, redisAvailable, uniquePrefix } from './helpers/redis.js'

const available = await redisAvailable()
const prefix = uniquePrefix('queue-lifecycle')

const rules: RuleInput[] = [
  { id: 'q', limit: 1, window: '1s', onLimit: { action: 'queue', maxWait: '5s', maxQueue: 3 } },
]
const facts = (ip: string) => ({ method: 'GET', path: '/', ip, headers: {} })

function recordingLogger(): Logger & { lines: unknown[] } {
  const lines: unknown[] = []
  const log = (obj: unknown, msg?: string): void => void lines.push([obj, msg])
  return { lines, debug: log, info: log, warn: log, error: log }
}

describe.skipIf(!available)('queued requests on a real RedisStore', () => {
  // Deletes the block's keys after it.
  adminConnection(prefix)
  afterEach(() => {
    vi.useRealTimers()
  })

  const limiterOn = async (logger: Logger, clock: () => number) => {
    const store = createRedisStore({
      url: REDIS_URL,
      prefix,
      timeSource: 'caller',
      callTimeoutMs: 2000,
    })
    await store.ready
    return createLimiter({ rules, store, clock, logger, decisionTimeoutMs: 2000 })
  }

  it('close() ends queued waits with false, refunds their reservations into Redis before closing, and logs nothing', async () => {
    const now = 1_000_000
    const logger = recordingLogger()
    const limiter = await limiterOn(logger, () => now)
    const ip = '198.51.100.1'
    expect((await limiter.check(facts(ip))).action).toBe('allow')
    const a = await limiter.check(facts(ip))
    const b = await limiter.check(facts(ip))
    expect([a, b]).toMatchObject([{ action: 'queue' }, { action: 'queue' }])
    const waits = [limiter.waitInQueue(a), limiter.waitInQueue(b)]
    await limiter.close()
    expect(await Promise.all(waits)).toEqual([false, false])
    limiter.release(a, 'abandoned')
    limiter.release(b)
    // Another host on the same Redis finds both reservations given back: one wait, not three.
    const other = await limiterOn(recordingLogger(), () => now)
    try {
      expect(await other.check(facts(ip))).toMatchObject({ action: 'queue', waitMs: 1000 })
    } finally {
      await other.close()
    }
    expect(logger.lines).toEqual([])
  })

  it('a queued request released as abandoned right as its wait ends gives its units back', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] })
    let now = 2_000_000
    const limiter = await limiterOn(recordingLogger(), () => now)
    const ip = '198.51.100.2'
    try {
      await limiter.check(facts(ip))
      const queued = await limiter.check(facts(ip))
      expect(queued).toMatchObject({ action: 'queue', waitMs: 1000 })
      const waiting = limiter.waitInQueue(queued, new AbortController().signal)
      now += 1000
      vi.advanceTimersByTime(1000)
      expect(await waiting).toBe(true)
      limiter.release(queued, 'abandoned')
      // The refund is sent without waiting for it: the next call on the connection follows it.
      expect(await limiter.check(facts(ip))).toMatchObject({ action: 'allow' })
    } finally {
      await limiter.close()
    }
  })
})
