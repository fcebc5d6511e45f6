import { Redis } from 'ioredis'
import { afterAll, describe, expect, it, onTestFinished } from 'vitest'
import { createLimiter, type RuleInput } from '@floodgate/core'
import { createRedisStore } from '@floodgate/redis'
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
  async function fleet(rules: RuleInput[]) {
    const hosts = [0, 1].map(() => {
      const store = createRedisStore({
        url: REDIS_URL,
        prefix,
        timeSource: 'caller',
        callTimeoutMs: 2000,
      })
      const limiter = createLimiter({ rules, store, clock, decisionTimeoutMs: 2000 })
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
      { id: 'ws-msg', match: '/never', key: 'header:x-user', limit: 3, window: '1m' },
    ])
    expect((await a.limit({ 'header:x-user': 'u1' }, { rule: 'ws-msg', cost: 2 })).remaining).toBe(
      1,
    )
    expect((await b.limit({ 'header:x-user': 'u1' }, { rule: 'ws-msg', cost: 2 })).allowed).toBe(
      false,
    )
    expect((await b.limit({ 'header:x-user': 'u1' }, { rule: 'ws-msg' })).allowed).toBe(true)
  })
})
