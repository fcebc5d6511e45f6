import fc from 'fast-check'
import { Redis } from 'ioredis'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import {
  createLimiter,
  type Decision,
  type Limiter,
  type RequestOutcome,
  type Store,
} from '@floodgate/core'
import type { RefundEntry } from '@floodgate/core/algorithms'
import { createRedisStore, createSyncedStore, type RedisStore } from '@floodgate/redis'
import { REDIS_URL, deletePrefix, redisAvailable, uniquePrefix } from './helpers/redis.js'

const available = await redisAvailable()
const prefix = uniquePrefix('plans')
const syncedPrefix = uniquePrefix('plans-synced')

interface Req {
  readonly plan?: string
}

const facts = (plan?: string) => ({
  method: 'POST',
  path: '/login',
  ip: '192.0.2.9',
  headers: plan === undefined ? {} : { 'x-plan': plan },
  request: { plan },
})

/** The RedisStore, with each refund it is asked for recorded. */
function recording(store: RedisStore): Store & { readonly refunds: string[][] } {
  const refunds: string[][] = []
  return {
    refunds,
    settlesWithinMs: store.settlesWithinMs,
    consume: (entries, nowMs) => store.consume(entries, nowMs),
    refund: (entries: readonly RefundEntry[], nowMs) => {
      refunds.push(entries.map((e) => e.rule.rule.id))
      return store.refund(entries, nowMs)
    },
  }
}

describe.skipIf(!available)('per-plan limits and counting by outcome on RedisStore', () => {
  let admin: Redis
  let store: RedisStore
  const now = 1_700_000_000_000

  beforeAll(async () => {
    admin = new Redis(REDIS_URL)
    store = createRedisStore({ url: REDIS_URL, prefix, timeSource: 'caller', callTimeoutMs: 1000 })
    await store.ready
  })
  afterAll(async () => {
    await store.close()
    await deletePrefix(admin, prefix)
    admin.disconnect()
  })

  function limiterOf(rules: Parameters<typeof createLimiter<Req>>[0]) {
    const s = recording(store)
    const limiter = createLimiter<Req>({
      ...rules,
      store: s,
      clock: () => now,
      decisionTimeoutMs: 1000,
    })
    const admitted = async (plan: string | undefined, n: number): Promise<number> => {
      let ok = 0
      for (let i = 0; i < n; i++) if ((await limiter.check(facts(plan))).allowed) ok++
      return ok
    }
    return { limiter, store: s, admitted }
  }

  it('keeps each tier in its own Redis state; downgrade and upgrade as documented', async () => {
    const { admitted } = limiterOf({
      rules: [
        {
          id: 'redis-plan',
          window: '1m',
          algorithm: 'sliding-window-counter',
          tiers: {
            by: 'header:x-plan',
            values: { free: { limit: 2 }, pro: { limit: 5 } },
            default: 'free',
          },
        },
      ],
    })
    expect(await admitted('pro', 1)).toBe(1)
    // Downgrade with 4 left on pro: free's own 2, never what pro had left.
    expect(await admitted('free', 5)).toBe(2)
    expect(await admitted('pro', 5)).toBe(4) // upgrade back: pro's own state, as it was left
    const keys = await admin.keys(`${prefix}:*redis-plan*`)
    expect(keys.some((k) => k.endsWith('|tier:free'))).toBe(true)
    expect(keys.some((k) => k.endsWith('|tier:pro'))).toBe(true)
  })

  it('takes limits from an asynchronous function', async () => {
    const { admitted } = limiterOf({
      rules: [{ id: 'redis-fn', limit: 1, window: '1m', algorithm: 'gcra' }],
      limits: {
        'redis-fn': (req) =>
          Promise.resolve(req.plan === 'pro' ? { limit: 4, burst: 4 } : undefined),
      },
    })
    expect(await admitted('pro', 6)).toBe(4)
    expect(await admitted(undefined, 3)).toBe(1)
  })

  it('refunds what a rule does not count through Redis, once per request', async () => {
    const { limiter, store: s } = limiterOf({
      rules: [{ id: 'redis-login', limit: 2, window: '15m', count: 'failed' }],
    })
    for (let i = 0; i < 5; i++) {
      const d = await limiter.check(facts())
      expect(d.allowed).toBe(true)
      limiter.release(d, 'succeeded')
      limiter.release(d, 'succeeded')
    }
    // Refunds are sent without waiting; a check after them sees their effect in order.
    expect(s.refunds).toHaveLength(5)
    limiter.release(await limiter.check(facts()), 'failed')
    limiter.release(await limiter.check(facts()), 'failed')
    expect((await limiter.check(facts())).allowed).toBe(false)
  })

  it('N requests with arbitrary outcomes leave exactly the counted units in Redis', async () => {
    let run = 0
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom<'failed' | 'successful'>('failed', 'successful'),
        fc.array(fc.constantFrom<RequestOutcome>('succeeded', 'failed'), { maxLength: 12 }),
        async (count, outcomes) => {
          const limit = 6
          const { limiter } = limiterOf({
            rules: [{ id: `prop-${++run}`, limit, window: '1h', algorithm: 'fixed-window', count }],
          })
          let used = 0
          const held: Array<[Decision, RequestOutcome]> = []
          for (const o of outcomes) {
            const d = await limiter.check(facts())
            expect(d.allowed).toBe(used < limit)
            if (!d.allowed) continue
            used++
            held.push([d, o])
          }
          for (const [d, o] of held) {
            limiter.release(d, o)
            if ((o === 'failed') !== (count === 'failed')) used--
          }
          let more = 0
          while ((await limiter.check(facts())).allowed) more++
          expect(more).toBe(limit - used)
        },
      ),
      { numRuns: 25 },
    )
  })
})

describe.skipIf(!available)('per-plan limits and counting by outcome on SyncedStore', () => {
  let admin: Redis
  const closers: Array<Limiter<Req>> = []

  beforeAll(() => {
    admin = new Redis(REDIS_URL)
  })
  afterAll(async () => {
    for (const l of closers) await l.close()
    await deletePrefix(admin, syncedPrefix)
    admin.disconnect()
  })

  it('decides tiers and refunds by outcome locally', async () => {
    const store = createSyncedStore({ url: REDIS_URL, prefix: syncedPrefix, syncMs: 600_000 })
    const limiter = createLimiter<Req>({
      store,
      clock: () => 1_700_000_000_000,
      rules: [
        {
          id: 'synced-plan',
          window: '1m',
          count: 'failed',
          tiers: {
            by: 'header:x-plan',
            values: { free: { limit: 1 }, pro: { limit: 3 } },
            default: 'free',
          },
        },
      ],
    })
    closers.push(limiter)
    const check = (plan?: string) => limiter.check(facts(plan)) as Decision
    for (let i = 0; i < 5; i++) limiter.release(check('pro'), 'succeeded')
    for (let i = 0; i < 3; i++) limiter.release(check('pro'), 'failed')
    expect(check('pro').allowed).toBe(false)
    expect(check('free')).toMatchObject({ allowed: true, limit: 1 })
    await store.syncNow()
  })

  it('refuses at startup a tiered rule whose algorithm it cannot share, naming the rule', () => {
    const store = createSyncedStore({ url: REDIS_URL, prefix: syncedPrefix, syncMs: 600_000 })
    const limiter = createLimiter({ store })
    closers.push(limiter)
    expect(() =>
      limiter.updateRules([
        {
          id: 'synced-window',
          window: '1m',
          algorithm: 'fixed-window',
          tiers: { by: 'header:x-plan', values: { a: { limit: 1 } }, default: 'a' },
        },
      ]),
    ).toThrow(/synced-window/)
  })
})
