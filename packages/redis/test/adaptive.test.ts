import { Redis } from 'ioredis'
import { afterAll, describe, expect, it, onTestFinished } from 'vitest'
import { createLimiter, type RuleInput } from '@floodgate/core'
import { createRedisStore } from '@floodgate/redis'
import { REDIS_URL, deletePrefix, redisAvailable, uniquePrefix } from './helpers/redis.js'

const available = await redisAvailable()
const prefix = uniquePrefix('adaptive')

// An adaptive rule beside a rule kept in Redis: the adaptive limit is each host's own (it never
// reaches the store), the other rule is shared by the fleet, and a request the adaptive rule
// refuses charges the shared rule nothing.
describe.skipIf(!available)('adaptive rule with RedisStore', () => {
  afterAll(async () => {
    const admin = new Redis(REDIS_URL)
    await deletePrefix(admin, prefix)
    admin.disconnect()
  })

  const rules: RuleInput[] = [
    { id: 'shed', algorithm: 'adaptive', adaptive: { target: '100ms', initialLimit: 2 } },
    { id: 'fleet-quota', limit: 10, window: '1m' },
  ]
  const facts = { method: 'GET', path: '/work', ip: '203.0.113.7', headers: {} }

  async function host() {
    const store = createRedisStore({ url: REDIS_URL, prefix, timeoutMs: 2000 })
    const limiter = createLimiter({ rules, store, timeoutMs: 2000 })
    onTestFinished(() => limiter.close())
    await store.ready
    return limiter
  }

  it('limits in flight per host, shares the other rule, and charges it nothing on a shed', async () => {
    const [a, b] = [await host(), await host()]
    const onA = [await a.check(facts), await a.check(facts)]
    expect(onA.map((d) => d.allowed)).toEqual([true, true])
    const shed = await a.check(facts)
    expect(shed).toMatchObject({ allowed: false, status: 503, rule: { id: 'shed' } })
    // Host b has its own limit of 2 in flight.
    expect((await b.check(facts)).allowed).toBe(true)
    expect((await b.check(facts)).allowed).toBe(true)
    expect(a.adaptive('shed')!.inFlight).toBe(2)
    expect(b.adaptive('shed')!.inFlight).toBe(2)
    // Four admitted across the fleet; the shed request took nothing from the shared quota.
    const [quota] = await a.get('203.0.113.7', { rule: 'fleet-quota' })
    expect(quota!.remaining).toBe(6)
    for (const d of onA) a.release(d)
    expect(a.adaptive('shed')!.inFlight).toBe(0)
    expect((await a.check(facts)).allowed).toBe(true)
  })
})
