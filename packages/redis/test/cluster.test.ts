import { Redis } from 'ioredis'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createLimiter, type Decision } from '@floodgate/core'
import { type RequestFacts } from '@floodgate/core/http'
import { createRedisStore, redisKey, type RedisStore } from '@floodgate/redis'
import { hashTag } from '../src/redis-key.js'
import { eventually } from './helpers/eventually.js'
import { RedisClusterFixture } from './helpers/redis-cluster.js'
import { redisBinariesAvailable } from './helpers/redis-server.js'

const binaries = redisBinariesAvailable()
if (!binaries && process.env.CI === 'true') throw new Error('redis-server is required under CI')

const facts = (ip: string, apiKey?: string): RequestFacts => ({
  method: 'GET',
  path: '/api',
  ip,
  headers: apiKey === undefined ? {} : { 'x-api-key': apiKey },
})

// No test here is about the deadline: long enough that a round trip on a busy machine meets it
// (at 50 ms, checks of a healthy cluster failed open, and were counted as passed).
const DEADLINE_MS = 2000

describe.skipIf(!binaries)('RedisStore on Redis Cluster (3 primaries, 3 replicas)', () => {
  let cluster: RedisClusterFixture
  let store: RedisStore
  let admin: Redis

  beforeAll(async () => {
    // Once more on failure: a free port can be taken by another process between the probe
    // and redis-server's bind on a busy machine.
    cluster = await RedisClusterFixture.start({ primaries: 3, replicas: 1 }).catch(() =>
      RedisClusterFixture.start({ primaries: 3, replicas: 1 }),
    )
    store = createRedisStore({ cluster: cluster.seeds, callTimeoutMs: DEADLINE_MS })
    await store.ready
    admin = new Redis(cluster.nodes[0]!.port, '127.0.0.1', { maxRetriesPerRequest: 0 })
    admin.on('error', () => {})
  }, 60_000)
  afterAll(async () => {
    admin?.disconnect()
    await store?.close()
    await cluster?.stop()
  })

  it('decides several rules of one client in one slot, all or nothing', async () => {
    const limiter = createLimiter({
      store,
      decisionTimeoutMs: DEADLINE_MS,
      rules: [
        {
          id: 'wide',
          algorithm: 'token-bucket',
          limit: 10,
          window: '1m',
          key: ['header:x-api-key'],
        },
        {
          id: 'narrow',
          algorithm: 'fixed-window',
          limit: 3,
          window: '1m',
          key: ['header:x-api-key'],
        },
        {
          id: 'slow',
          algorithm: 'sliding-window-log',
          limit: 5,
          window: '1m',
          key: ['header:x-api-key'],
        },
      ],
    })
    const ds: Decision[] = []
    for (let i = 0; i < 5; i++) ds.push(await limiter.check(facts('10.0.0.1', 'key-a')))
    expect(ds.map((d) => d.allowed)).toEqual([true, true, true, false, false])
    expect(ds.every((d) => !d.failedOpen)).toBe(true)
    // The refused requests charged nothing, and RateLimit reports what remains: 'wide' stays at 7.
    const wide = (d: Decision): number | undefined =>
      d.outcomes.find((o) => o.rule.id === 'wide')?.remaining
    expect([wide(ds[2]!), wide(ds[3]!), wide(ds[4]!)]).toEqual([7, 7, 7])
  })

  it("a client key with braces ('}evil') cannot scatter its rules over slots", async () => {
    // With the raw key as the tag, '}evil' empties it and the rules land in different slots.
    const naive = await Promise.all(
      ['r1', 'r2', 'r3'].map((r) => admin.cluster('KEYSLOT', `fg:{}evil}:${r}`)),
    )
    expect(new Set(naive).size).toBeGreaterThan(1)
    const ours = await Promise.all(
      ['r1', 'r2', 'r3'].map((r) => admin.cluster('KEYSLOT', redisKey('fg', '}evil', r))),
    )
    expect(new Set(ours).size).toBe(1)

    const limiter = createLimiter({
      store,
      decisionTimeoutMs: DEADLINE_MS,
      rules: [
        { id: 'r1', limit: 2, window: '1m', key: ['header:x-api-key'] },
        { id: 'r2', algorithm: 'gcra', limit: 5, window: '1m', key: ['header:x-api-key'] },
      ],
    })
    for (const evil of ['}evil', '{evil}', '}{', '{}']) {
      const ds: Decision[] = []
      for (let i = 0; i < 3; i++) ds.push(await limiter.check(facts('10.0.0.2', evil)))
      // Limited, not failed open by a CROSSSLOT error.
      expect(ds.map((d) => [d.allowed, d.failedOpen])).toEqual([
        [true, false],
        [true, false],
        [false, false],
      ])
    }
  })

  it('rules keyed by different client keys (ip and api key) span slots: charges are undone when one refuses', async () => {
    expect(hashTag('10.9.9.9')).not.toBe(hashTag('key-b'))
    const limiter = createLimiter({
      store,
      decisionTimeoutMs: DEADLINE_MS,
      rules: [
        { id: 'per-ip', limit: 10, window: '1m', key: ['ip'] },
        { id: 'per-key', limit: 2, window: '1m', key: ['header:x-api-key'] },
      ],
    })
    const ds: Decision[] = []
    for (let i = 0; i < 4; i++) ds.push(await limiter.check(facts('10.9.9.9', 'key-b')))
    expect(ds.map((d) => d.allowed)).toEqual([true, true, false, false])
    expect(ds.every((d) => !d.failedOpen)).toBe(true)
    // Only the two admitted requests stay charged to the ip rule.
    const ipOnly = createLimiter({
      store,
      decisionTimeoutMs: DEADLINE_MS,
      rules: [{ id: 'per-ip', limit: 10, window: '1m', key: ['ip'] }],
    })
    expect((await ipOnly.check(facts('10.9.9.9'))).remaining).toBe(7)
  })

  it('a request spanning slots whose call to one primary fails gives back the slots the other calls took', async () => {
    // The request passes unjudged, so nobody releases what the healthy primary recorded: a
    // concurrency slot there stayed taken for its whole lease (60 s).
    const slot = {
      id: 'span-slots',
      algorithm: 'concurrency' as const,
      limit: 1,
      key: ['ip' as const],
    }
    const limiter = createLimiter({
      store,
      rules: [slot, { id: 'span-key', limit: 100, window: '1m', key: ['header:x-api-key'] }],
    })
    const ipOnly = createLimiter({ store, rules: [slot] })
    const ip = '10.9.8.1'
    const primaryOf = async (k: string, stateId: string): Promise<number> => {
      const slotNo = Number(await admin.cluster('KEYSLOT', redisKey('fg', k, stateId)))
      return (await cluster.primaryOf(slotNo, cluster.nodes[0]!)).port
    }
    const ipPort = await primaryOf(ip, '')
    let apiKey = ''
    let keyPort = ipPort
    for (let i = 0; keyPort === ipPort; i++) {
      apiKey = `span-${i}`
      keyPort = await primaryOf(apiKey, '')
    }
    const paused = new Redis(keyPort, '127.0.0.1', { maxRetriesPerRequest: 0 })
    paused.on('error', () => {})
    try {
      await paused.client('PAUSE', 600, 'ALL')
      const d = await limiter.check(facts(ip, apiKey))
      expect(d.allowed && d.failedOpen).toBe(true)
      limiter.release(d)
    } finally {
      // The pause outlives the request; the next tests need that primary.
      const unpause = new Redis(keyPort, '127.0.0.1', { maxRetriesPerRequest: 0 })
      await unpause.client('UNPAUSE')
      unpause.disconnect()
      paused.disconnect()
    }
    await eventually(async () => {
      const state = await ipOnly.get(ip).catch(() => [])
      return state[0]?.remaining === 1
    }, 3000)
  })

  it('reloads the script on every node after SCRIPT FLUSH', async () => {
    const limiter = createLimiter({
      store,
      decisionTimeoutMs: DEADLINE_MS,
      rules: [{ id: 'flush', limit: 100, window: '1m', key: ['ip'] }],
    })
    for (let i = 0; i < 20; i++) await limiter.check(facts(`10.1.0.${i}`))
    await Promise.all(
      cluster.nodes.map(async (n) => {
        const c = new Redis(n.port, '127.0.0.1', { maxRetriesPerRequest: 0 })
        await c.script('FLUSH')
        c.disconnect()
      }),
    )
    const ds: Decision[] = []
    for (let i = 0; i < 20; i++) ds.push(await limiter.check(facts(`10.1.0.${i}`)))
    expect(ds.every((d) => d.allowed && !d.failedOpen && d.remaining === 98)).toBe(true)
  })

  // Last: it changes the cluster's topology.
  it('a primary killed under load: its slots fail open until the replica takes over, then limiting resumes', async () => {
    const limiter = createLimiter({
      store,
      decisionTimeoutMs: DEADLINE_MS,
      rules: [
        {
          id: 'failover',
          algorithm: 'fixed-window',
          limit: 1000,
          window: '1h',
          key: ['header:x-api-key'],
        },
      ],
    })
    const client = 'failover-client'
    const slot = Number(await admin.cluster('KEYSLOT', redisKey('fg', client, 'x')))
    const primary = await cluster.primaryOf(slot, cluster.nodes[0]!)
    for (let i = 0; i < 5; i++)
      expect((await limiter.check(facts('10.2.0.1', client))).failedOpen).toBe(false)

    await primary.kill()
    const seen = { failedOpen: 0, judged: 0 }
    await eventually(async () => {
      const d = await limiter.check(facts('10.2.0.1', client))
      expect(d.allowed).toBe(true)
      if (d.failedOpen) seen.failedOpen++
      else if (seen.failedOpen > 0) seen.judged++
      return seen.judged >= 5
    }, 20_000)
    expect(seen.failedOpen).toBeGreaterThan(0)
    // The replica took over and keeps counting.
    const a = await limiter.check(facts('10.2.0.1', client))
    const b = await limiter.check(facts('10.2.0.1', client))
    expect([a.failedOpen, b.failedOpen]).toEqual([false, false])
    expect(b.remaining).toBe(a.remaining - 1)
  }, 30_000)
})
