import { Redis } from 'ioredis'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { testRule } from '@floodgate/core/testing'
import { createRedisStore, redisKey, type RedisStore } from '@floodgate/redis'
import { REDIS_URL, deletePrefix, redisAvailable, uniquePrefix } from './helpers/redis.js'

// The buckets decide in whole steps of 1/scale unit (exact), but their stored state keeps the
// previous version's meaning, [used units (GCRA: ms ahead), lastMs], so that during a rolling
// deploy a host of either version reads what the other wrote. The rate of the reported case:
// 508,271,373 per 7 ms with a burst of 2e10, where the previous version refused a cost of
// exactly what was left (2,815,942,313 at +7 ms).
const available = await redisAvailable()
const prefix = uniquePrefix('exact-state')
const p = { limit: 508_271_373, windowMs: 7, burst: 20_000_000_000 }
const base = 1_763_776_543_210
const taken = [
  [0, 17_461_401_615],
  [4, 230_927_445],
] as const
// used × 7 after both requests, in whole steps (BigInt): 7 × taken - 4 ms × 508,271,373.
const steps = (17_461_401_615n + 230_927_445n) * 7n - 4n * 508_271_373n
const leftAt7 = 2_815_942_313

describe.skipIf(!available)('bucket state across versions', () => {
  let store: RedisStore
  let admin: Redis
  beforeAll(async () => {
    store = createRedisStore({ url: REDIS_URL, prefix, timeSource: 'caller', callTimeoutMs: 2000 })
    await store.ready
    admin = new Redis(REDIS_URL)
  })
  afterAll(async () => {
    await deletePrefix(admin, prefix)
    admin.disconnect()
    await store.close()
  })

  it.each(['token-bucket', 'gcra', 'leaky-bucket'] as const)(
    '%s: the stored state is what the previous version stores, within a float step',
    async (name) => {
      const rule = testRule(name, p.limit, p.windowMs, { burst: p.burst })
      const key = `c-${name}`
      for (const [dt, cost] of taken) {
        const [r] = await store.consume(
          [{ rule, key, cost, maxWaitMs: 0, shadow: false }],
          base + dt,
        )
        expect(r!.allowed).toBe(true)
      }
      const raw = (await admin.getBuffer(redisKey(prefix, key, rule.stateId)))!
      expect(raw.length).toBe(16)
      const [value, last] = [raw.readDoubleLE(0), raw.readDoubleLE(8)]
      expect(last).toBe(base + 4)
      // The previous version's reading: units taken, or (GCRA) ms of schedule ahead.
      const exact = name === 'gcra' ? Number(steps) / p.limit : Number(steps) / p.windowMs
      expect(Math.abs(value - exact)).toBeLessThanOrEqual(exact * 2 ** -52)
      const [r] = await store.consume(
        [{ rule, key, cost: leftAt7, maxWaitMs: 0, shadow: false }],
        base + 7,
      )
      expect(r).toMatchObject({ allowed: true, remaining: 0 })
    },
  )

  it.each(['token-bucket', 'gcra', 'leaky-bucket'] as const)(
    '%s: a state the previous version wrote is read to its whole step',
    async (name) => {
      const rule = testRule(name, p.limit, p.windowMs, { burst: p.burst })
      const key = `o-${name}`
      // The previous version's arithmetic: units (or ms) in floats, drained then taken.
      let used = 17_461_401_615
      used = used - (4 * p.limit) / p.windowMs + 230_927_445
      const value = name === 'gcra' ? (used * p.windowMs) / p.limit : used
      const state = Buffer.alloc(16)
      state.writeDoubleLE(value, 0)
      state.writeDoubleLE(base + 4, 8)
      await admin.set(redisKey(prefix, key, rule.stateId), state, 'PX', 60_000)
      const entry = (cost: number) => ({ rule, key, cost, maxWaitMs: 0, shadow: false })
      const [over] = await store.consume([entry(leftAt7 + 1)], base + 7)
      expect(over).toMatchObject({ allowed: false, remaining: leftAt7 })
      const [exact] = await store.consume([entry(leftAt7)], base + 7)
      expect(exact).toMatchObject({ allowed: true, remaining: 0 })
    },
  )
})
