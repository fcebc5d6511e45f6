import fc from 'fast-check'
import { Redis } from 'ioredis'
import { afterAll, describe, expect, it, onTestFinished } from 'vitest'
import { createLimiter, type Decision, type Store } from '@floodgate/core'
import { createRedisStore, createSyncedStore } from '@floodgate/redis'
import { RECORD_RENEW_MS, RecordedLimits, recordTtlMs } from '../src/recorded-limits.js'
import { REDIS_URL, deletePrefix, redisAvailable, uniquePrefix } from './helpers/redis.js'

const available = await redisAvailable()
const prefix = uniquePrefix('recorded-limits')

/** Poll (bounded) until `probe` holds: a limit function's answer is recorded without waiting. */
async function eventually(probe: () => Promise<boolean>, ms = 5000): Promise<void> {
  const deadline = Date.now() + ms
  while (!(await probe())) {
    if (Date.now() > deadline) throw new Error('condition not met in time')
    await new Promise((r) => setTimeout(r, 10))
  }
}

/** Every key under the prefix, with its PTTL (-1: no TTL). */
async function ttls(admin: Redis, under: string): Promise<Map<string, number>> {
  const out = new Map<string, number>()
  let cursor = '0'
  do {
    const [next, keys] = await admin.scan(cursor, 'MATCH', `${under}:*`, 'COUNT', 1000)
    cursor = next
    for (const k of keys) out.set(k, await admin.pttl(k))
  } while (cursor !== '0')
  return out
}

/** A limiter whose rule a limit function raises to 5 for plan 'pro', on a ready store. */
async function perPlanLimiter(store: Store & { readonly ready: Promise<void> }) {
  const limiter = createLimiter<{ plan: string }>({
    rules: [{ id: 'per-plan', limit: 1, window: '1m', algorithm: 'token-bucket' }],
    store,
    decisionTimeoutMs: 2000,
    limits: { 'per-plan': (req) => (req.plan === 'pro' ? 5 : undefined) },
  })
  onTestFinished(() => limiter.close())
  await store.ready
  return limiter
}

describe.skipIf(!available)('recorded limit function answers (real Redis)', () => {
  const admin = new Redis(REDIS_URL)
  afterAll(async () => {
    await deletePrefix(admin, prefix)
    admin.disconnect()
  })

  it('every key a limiter with a limit function writes has a TTL, the set of its answers too', async () => {
    for (const synced of [false, true]) {
      const under = `${prefix}:${synced ? 'synced' : 'redis'}`
      const store = synced
        ? createSyncedStore({ url: REDIS_URL, prefix: under, syncMs: 60_000 })
        : createRedisStore({ url: REDIS_URL, prefix: under, callTimeoutMs: 2000 })
      const limiter = await perPlanLimiter(store)
      for (const plan of ['pro', 'free']) {
        const d: Decision = await limiter.check({
          method: 'GET',
          path: '/',
          ip: '203.0.113.7',
          headers: {},
          request: { plan },
        })
        expect(d.failedOpen).toBe(false)
      }
      if (synced) await (store as ReturnType<typeof createSyncedStore>).syncNow()
      await eventually(async () => [...(await ttls(admin, under)).keys()].some(isRecord))
      const keys = await ttls(admin, under)
      expect([...keys.keys()].filter(isRecord)).toHaveLength(1)
      for (const [key, ttl] of keys) expect({ key, ttl: ttl > 0 }).toEqual({ key, ttl: true })
    }
  })

  it('a record lives past its last renewal as long as the states of its answers, and a renewal restores it (property)', async () => {
    const client = new Redis(REDIS_URL)
    onTestFinished(() => client.disconnect())
    const records = new RecordedLimits(client, `${prefix}:renew`, 2000, () => {})
    onTestFinished(() => records.close())
    let run = 0
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 1, max: 10_000 }),
        fc.integer({ min: 1, max: 2 ** 31 - 1 }),
        fc.integer({ min: 0, max: 10_000 }),
        fc.boolean(),
        async (limit, windowMs, extra, untimed) => {
          const stateId = `rule-${run++}`
          const key = `${prefix}:renew:limits:${stateId}`
          const limits = { limit, windowMs, burst: limit + extra }
          // A set written before records had a TTL gets one.
          if (untimed) await admin.sadd(key, 'left by an older version')
          await records.record(stateId, limits)
          const ttl = recordTtlMs(limits)
          const refill = (windowMs * (limit + extra)) / limit
          expect(ttl).toBeGreaterThanOrEqual(2 * refill + 2 * RECORD_RENEW_MS)
          expect(await admin.pttl(key)).toBeGreaterThan(ttl - 10_000)
          // Time passes (the set nearly expired); the renewal gives it its full life again.
          await admin.pexpire(key, 5000)
          await records.renew()
          expect(await admin.pttl(key)).toBeGreaterThan(ttl - 10_000)
          expect(await records.read(stateId)).toEqual([limits])
        },
      ),
      { numRuns: 30 },
    )
  })

  it('a record that vanished (evicted, deleted) is written again, with its TTL, by the next renewal', async () => {
    const client = new Redis(REDIS_URL)
    onTestFinished(() => client.disconnect())
    const records = new RecordedLimits(client, `${prefix}:lost`, 2000, () => {})
    onTestFinished(() => records.close())
    const limits = { limit: 5, windowMs: 1000, burst: 5 }
    await records.record('rule', limits)
    const key = `${prefix}:lost:limits:rule`
    await admin.unlink(key)
    expect(await records.read('rule')).toEqual([])
    await records.renew()
    expect(await records.read('rule')).toEqual([limits])
    expect(await admin.pttl(key)).toBeGreaterThan(recordTtlMs(limits) - 10_000)
  })

  it('garbage of another type at the record key: get and reset treat it as no record, log it, and throw nothing', async () => {
    const under = `${prefix}:garbage`
    const warned: unknown[] = []
    const logger = {
      ...{ debug: () => {}, info: () => {}, error: () => {} },
      warn: (fields: unknown) => void warned.push(fields),
    }
    const store = createRedisStore({ url: REDIS_URL, prefix: under, callTimeoutMs: 2000, logger })
    const limiter = await perPlanLimiter(store)
    const facts = { method: 'GET', path: '/', ip: '203.0.113.7', headers: {} }
    expect((await limiter.check({ ...facts, request: { plan: 'pro' } })).failedOpen).toBe(false)
    await eventually(async () => [...(await ttls(admin, under)).keys()].some(isRecord))
    const key = [...(await ttls(admin, under)).keys()].find(isRecord)!
    for (const write of [() => admin.set(key, 'garbage'), () => admin.rpush(key, 'null')]) {
      await admin.unlink(key)
      await write()
      const got = await limiter.get({ ip: '203.0.113.7' })
      expect(got.length).toBeGreaterThan(0)
      await limiter.reset({ ip: '203.0.113.7' })
    }
    // Logged (at most once per 10 s, like other Redis trouble).
    expect(warned).toContainEqual(
      expect.objectContaining({ code: 'FG_WRN_STORE_RECORD_MALFORMED' }),
    )
  })
})

function isRecord(key: string): boolean {
  return key.includes(':limits:')
}
