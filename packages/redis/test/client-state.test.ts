import { Redis } from 'ioredis'
import { afterAll, describe, expect, it, onTestFinished, vi } from 'vitest'
import { createLimiter, type LimiterOptions, type RuleInput } from '@floodgate/core'
import { describeClientStateProperty } from '@floodgate/core/testing'
import { createRedisStore, createSyncedStore, type RedisStore } from '@floodgate/redis'
import { REDIS_URL, deletePrefix, redisAvailable, uniquePrefix } from './helpers/redis.js'

const available = await redisAvailable()
const prefix = uniquePrefix('client-state')

describe.skipIf(!available)('one client across the fleet (RedisStore)', () => {
  afterAll(async () => {
    const admin = new Redis(REDIS_URL)
    await deletePrefix(admin, prefix)
    admin.disconnect()
  })

  let now = 1_000_000
  const clock = (): number => now
  const facts = { method: 'POST', path: '/login', ip: '203.0.113.7', headers: {} }

  /** Two hosts: each its own limiter, store and connection, on one Redis. */
  async function fleet(rules: RuleInput[], more: Partial<LimiterOptions> = {}) {
    const hosts = [0, 1].map(() => {
      const store = createRedisStore({
        url: REDIS_URL,
        prefix,
        timeSource: 'caller',
        callTimeoutMs: 2000,
      })
      const limiter = createLimiter({ rules, store, clock, decisionTimeoutMs: 2000, ...more })
      onTestFinished(() => limiter.close())
      return { store, limiter }
    })
    await Promise.all(hosts.map((h) => h.store.ready))
    return [hosts[0]!.limiter, hosts[1]!.limiter] as const
  }

  it('a reset on one host frees the client on the other', async () => {
    const [a, b] = await fleet([{ id: 'login-reset', limit: 2, window: '1m' }])
    await a.check(facts)
    await a.check(facts)
    expect((await a.check(facts)).allowed).toBe(false)
    await b.reset('203.0.113.7')
    expect(await a.check(facts)).toMatchObject({ allowed: true, remaining: 1 })
  })

  it('a penalty on one host is debt on the other; get reads it from either', async () => {
    const [a, b] = await fleet([{ id: 'api-penalty', limit: 10, window: '10s' }])
    await a.penalty({ ip: '203.0.113.7' }, 14)
    expect((await b.get('203.0.113.7'))[0]).toMatchObject({ remaining: 0, resetMs: 14_000 })
    const refused = await b.check(facts)
    expect(refused).toMatchObject({ allowed: false, retryAfterMs: 5000 })
    await b.reward('203.0.113.7', 5)
    expect((await a.check(facts)).allowed).toBe(true)
  })

  it('a ban started by one host is enforced by the other, with the time left', async () => {
    const rules: RuleInput[] = [
      {
        id: 'login-ban',
        algorithm: 'fixed-window',
        limit: 1,
        window: '1s',
        ban: { after: 2, within: '1m', for: '5m' },
      },
    ]
    const [a, b] = await fleet(rules)
    now = 2_000_000
    expect((await a.check(facts)).allowed).toBe(true)
    expect((await a.check(facts)).banned).toBeUndefined()
    expect(await a.check(facts)).toMatchObject({
      allowed: false,
      banned: true,
      retryAfterMs: 300_000,
    })
    now += 60_000
    const seen = await b.check(facts)
    expect(seen).toMatchObject({ allowed: false, banned: true, retryAfterMs: 240_000 })
    expect((await b.get('203.0.113.7'))[0]!.bannedForMs).toBe(240_000)
    // Another client is not banned.
    expect((await b.check({ ...facts, ip: '198.51.100.9' })).allowed).toBe(true)
    now += 240_000
    expect((await b.check(facts)).allowed).toBe(true)
  })

  it('limit() decides events across the fleet', async () => {
    const [a, b] = await fleet([
      { id: 'ws-msg', match: false, key: 'header:x-user', limit: 3, window: '1m' },
    ])
    expect((await a.limit({ 'header:x-user': 'u1' }, { rule: 'ws-msg', cost: 2 })).remaining).toBe(
      1,
    )
    expect((await b.limit({ 'header:x-user': 'u1' }, { rule: 'ws-msg', cost: 2 })).allowed).toBe(
      false,
    )
    expect((await b.limit({ 'header:x-user': 'u1' }, { rule: 'ws-msg' })).allowed).toBe(true)
  })

  it('a reset on one host frees every tier the client was counted under, on the other', async () => {
    const rules: RuleInput[] = [
      {
        id: 'plans-reset',
        key: 'header:x-user',
        window: '1m',
        tiers: {
          by: 'header:x-plan',
          values: { free: { limit: 1 }, pro: { limit: 2 } },
          default: 'free',
        },
      },
    ]
    const [a, b] = await fleet(rules)
    const as = (plan: string) => ({ ...facts, headers: { 'x-user': 'u7', 'x-plan': plan } })
    await a.check(as('pro'))
    await a.check(as('pro'))
    expect((await a.check(as('pro'))).allowed).toBe(false)
    expect((await a.check(as('free'))).allowed).toBe(true)
    expect((await b.get({ 'header:x-user': 'u7', 'header:x-plan': 'pro' }))[0]).toMatchObject({
      tier: 'pro',
      remaining: 0,
    })
    // Without the plan: one view per tier.
    const views = await b.get('u7')
    expect(views.map((v) => [v.tier, v.remaining])).toEqual([
      ['free', 0],
      ['pro', 0],
    ])
    await b.reset('u7')
    expect(await a.check(as('pro'))).toMatchObject({ allowed: true, remaining: 1 })
    expect(await a.check(as('free'))).toMatchObject({ allowed: true, remaining: 0 })
  })

  it("a limit function's answer on one host is found by the other's reset, get and penalty", async () => {
    const rules: RuleInput[] = [{ id: 'fn-reset', key: 'header:x-user', limit: 1, window: '1m' }]
    const byPlan = (_req: unknown, f: { headers: Record<string, unknown> }) =>
      f.headers['x-plan'] === 'pro' ? 3 : undefined
    const [a, b] = await fleet(rules, { limits: { 'fn-reset': byPlan } })
    const pro = { ...facts, headers: { 'x-user': 'u8', 'x-plan': 'pro' } }
    await a.check(pro)
    await a.check(pro)
    await a.check(pro)
    expect((await a.check(pro)).allowed).toBe(false)
    // Host b never answered 3: it reads the answer host a recorded.
    await vi.waitFor(async () => {
      const views = await b.get('u8')
      expect(views.map((v) => [v.limit, v.remaining])).toEqual([
        [1, 1],
        [3, 0],
      ])
    })
    await b.reset('u8')
    expect(await a.check(pro)).toMatchObject({ allowed: true, remaining: 2 })
    await b.penalty('u8', 5)
    expect((await a.check(pro)).allowed).toBe(false)
  })
})

const shared = available
  ? createRedisStore({ url: REDIS_URL, prefix, timeSource: 'caller', callTimeoutMs: 2000 })
  : undefined
describe.skipIf(!available)('RedisStore (real Redis)', () => {
  afterAll(() => shared?.close())
  describeClientStateProperty('RedisStore', { store: () => shared as RedisStore, runs: 60 })
})

describe.skipIf(!available)('SyncedStore', () => {
  it('records a limit function answer in Redis, where another host reads it', async () => {
    const stores = [0, 1].map(() =>
      createSyncedStore({ url: REDIS_URL, prefix, syncMs: 60_000, syncTimeoutMs: 2000 }),
    )
    onTestFinished(() => Promise.all(stores.map((s) => s.close())).then(() => undefined))
    await Promise.all(stores.map((s) => s.ready))
    await stores[0]!.recordLimits('synced-fn|token-bucket|1|60000|1', {
      limit: 4,
      windowMs: 60_000,
      burst: 4,
    })
    expect(await stores[1]!.recordedLimits('synced-fn|token-bucket|1|60000|1')).toEqual([
      { limit: 4, windowMs: 60_000, burst: 4 },
    ])
  })
})
