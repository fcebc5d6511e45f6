import fc from 'fast-check'
import { Redis } from 'ioredis'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import {
  MemoryStore,
  createLimiter,
  type Decision,
  type Limiter,
  type RuleInput,
  type Store,
} from '@floodgate/core'
import type { RequestFacts } from '@floodgate/core/http'
import { createRedisStore, createSyncedStore, redisKey, type RedisStore } from '@floodgate/redis'
import { recordingLogger } from './helpers/recording-logger.js'
import { RedisServer, redisBinariesAvailable } from './helpers/redis-server.js'

// Any Floodgate key may vanish between two operations: evicted under `maxmemory`, deleted by an
// operator, lost in a failover. These tests delete keys at random between operations on a
// redis-server of their own and check that a loss only ever forgets history.

const binaries = redisBinariesAvailable()
if (!binaries && process.env.CI === 'true') throw new Error('redis-server is required under CI')

const facts = (ip: string): RequestFacts => ({ method: 'GET', path: '/', ip, headers: {} })

/** Every key under `prefix` (SCAN, not KEYS: the way an operator would look). */
async function keysUnder(redis: Redis, prefix: string): Promise<string[]> {
  const out: string[] = []
  let cursor = '0'
  do {
    const [next, batch] = await redis.scan(cursor, 'MATCH', `${prefix}:*`, 'COUNT', 1000)
    cursor = next
    out.push(...batch)
  } while (cursor !== '0')
  return out.sort()
}

/** Delete the keys under `prefix` that `pick` chooses (by index in SCAN order); returns them. */
async function loseKeys(redis: Redis, prefix: string, pick: readonly boolean[]): Promise<string[]> {
  const keys = await keysUnder(redis, prefix)
  const lost = keys.filter((_, i) => pick[i % pick.length] === true)
  if (lost.length > 0) await redis.unlink(...lost)
  return lost
}

/** Every key under `prefix` has a TTL: none may live forever. */
async function expectAllExpire(redis: Redis, prefix: string, when: string): Promise<void> {
  for (const k of await keysUnder(redis, prefix)) {
    const pttl = await redis.pttl(k)
    expect(pttl, `${when}: PTTL of ${k}`).toBeGreaterThan(0)
  }
}

describe.skipIf(!binaries)('key loss (a redis-server owned by the test)', () => {
  let server: RedisServer
  let admin: Redis
  let run = 0

  beforeAll(async () => {
    server = await RedisServer.start()
    admin = new Redis(server.port, '127.0.0.1')
  })

  afterAll(async () => {
    admin?.disconnect()
    await server?.stop()
  })

  /** A limiter on a RedisStore of its own prefix, with a caller clock the test moves. */
  async function redisLimiter(
    rules: RuleInput[],
    clock: () => number,
  ): Promise<{
    limiter: Limiter
    store: RedisStore
    prefix: string
    log: ReturnType<typeof recordingLogger>
  }> {
    const prefix = `kl${++run}`
    const log = recordingLogger()
    const store = createRedisStore({
      url: server.url,
      prefix,
      timeSource: 'caller',
      callTimeoutMs: 2000,
      logger: log,
    })
    const limiter = createLimiter({ rules, store, clock, logger: log, decisionTimeoutMs: 2000 })
    await store.ready
    return { limiter, store, prefix, log }
  }

  it('a full Redis with noeviction: a burst fails open with one log line and writes nothing, and limiting resumes where it was', async () => {
    const now = 5_000
    const rules: RuleInput[] = [
      { id: 'fw', algorithm: 'fixed-window', limit: 5, window: '1h', key: ['ip'] },
      { id: 'conc', algorithm: 'concurrency', limit: 3, key: ['ip'] },
    ]
    const { limiter, prefix, log } = await redisLimiter(rules, () => now)
    const snapshot = async (): Promise<string[]> => {
      const out: string[] = []
      for (const k of await keysUnder(admin, prefix)) {
        out.push(`${k}=${(await admin.getBuffer(k))?.toString('hex')}`)
      }
      return out
    }
    const hot = '198.51.100.3'
    try {
      const held = [await limiter.check(facts(hot)), await limiter.check(facts(hot))]
      expect(held.map((d) => d.allowed)).toEqual([true, true])
      const before = await snapshot()
      await admin.config('SET', 'maxmemory-policy', 'noeviction')
      await admin.config('SET', 'maxmemory', '1')
      // 64 decisions at once: batches of 16 requests per script call, every one refused OOM.
      const burst = await Promise.all(
        Array.from({ length: 64 }, async (_, i) =>
          limiter.check(facts(i % 4 === 0 ? hot : `203.0.113.${i}`)),
        ),
      )
      expect(burst.filter((d) => !d.failedOpen)).toEqual([])
      expect(log.lines).toHaveLength(1)
      expect(log.lines[0]).toMatch(/OOM/)
      // Nothing was written, not even part of a batch.
      expect(await snapshot()).toEqual(before)
      await admin.config('SET', 'maxmemory', '0')
      // Decisions that failed open hold no slot: their releases free nothing.
      for (const d of [...burst, ...held]) limiter.release(d)
      await new Promise((r) => setTimeout(r, 100))
      // Two of the window's five were used before the burst, and all three slots are free.
      const after = []
      for (let i = 0; i < 4; i++) after.push(await limiter.check(facts(hot)))
      expect(after.map((d) => d.allowed)).toEqual([true, true, true, false])
      expect(after.map((d) => d.failedOpen)).toEqual([false, false, false, false])
    } finally {
      await admin.config('SET', 'maxmemory', '0')
      await limiter.close()
    }
  })

  it('a lost concurrency key forgets the slots it held, and the releases of those slots free nothing', async () => {
    // Held slots are tagged with how many times their key was lost before they were taken:
    // the store must count exactly the slots taken since the last loss.
    type Op =
      | { kind: 'acquire'; client: number }
      | { kind: 'release'; pick: number }
      | { kind: 'lose'; pick: boolean[] }
    const op: fc.Arbitrary<Op> = fc.oneof(
      {
        weight: 4,
        arbitrary: fc.record({ kind: fc.constant('acquire' as const), client: fc.nat(1) }),
      },
      {
        weight: 3,
        arbitrary: fc.record({ kind: fc.constant('release' as const), pick: fc.nat() }),
      },
      {
        weight: 1,
        arbitrary: fc.record({
          kind: fc.constant('lose' as const),
          pick: fc.array(fc.boolean(), { minLength: 1, maxLength: 3 }),
        }),
      },
    )
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 1, max: 3 }),
        fc.array(op, { minLength: 10, maxLength: 60, size: 'max' }),
        async (limit, ops) => {
          const now = 1_000_000
          const rule: RuleInput = { id: 'slots', algorithm: 'concurrency', limit, key: ['ip'] }
          const { limiter, store, prefix, log } = await redisLimiter([rule], () => now)
          try {
            const clients = ['198.51.100.1', '198.51.100.2']
            // The state ids hold no braces: a client's keys start with its hash tag.
            const tagOf = clients.map((c) => redisKey(prefix, c, ''))
            const losses = [0, 0]
            const held: { client: number; epoch: number; decision: Decision }[] = []
            for (const o of ops) {
              if (o.kind === 'acquire') {
                const d = await limiter.check(facts(clients[o.client]!))
                if (d.allowed)
                  held.push({ client: o.client, epoch: losses[o.client]!, decision: d })
                else {
                  // Refused only when the slots taken since the last loss fill the limit.
                  const current = held.filter(
                    (h) => h.client === o.client && h.epoch === losses[o.client],
                  )
                  expect(current.length, 'refused with a slot free since the last loss').toBe(limit)
                }
              } else if (o.kind === 'release') {
                if (held.length === 0) continue
                const [h] = held.splice(o.pick % held.length, 1)
                limiter.release(h!.decision)
                await drain(store, limiter, now)
              } else {
                const lost = await loseKeys(admin, prefix, o.pick)
                tagOf.forEach((tag, c) => {
                  if (lost.some((k) => k.startsWith(tag))) losses[c]!++
                })
              }
              for (let c = 0; c < clients.length; c++) {
                const mine = held.filter((h) => h.client === c)
                const current = mine.filter((h) => h.epoch === losses[c])
                expect(current.length, 'slots taken since the last loss').toBeLessThanOrEqual(limit)
                // Each loss forgets at most one limit's worth: a single loss admits at most 2x.
                const epochs = new Set(mine.map((h) => h.epoch)).size
                expect(mine.length).toBeLessThanOrEqual(limit * Math.max(1, epochs))
              }
              await expectAllExpire(admin, prefix, `after ${o.kind}`)
            }
            // Every holder gone: nothing is left counted, and the limit is whole again.
            for (const h of held.splice(0)) limiter.release(h.decision)
            await drain(store, limiter, now)
            expect(
              await keysUnder(admin, prefix),
              'keys left once every slot was released',
            ).toEqual([])
            for (let i = 0; i < limit; i++)
              expect((await limiter.check(facts(clients[0]!))).allowed).toBe(true)
            expect((await limiter.check(facts(clients[0]!))).allowed).toBe(false)
            expect(log.lines).toEqual([])
          } finally {
            await limiter.close()
          }
        },
      ),
      { numRuns: 100 },
    )
  })

  it('after a loss, once the holders of the forgotten slots end, the limit holds again under steady traffic', async () => {
    // The failing example before slots were named: a lost key, then steady traffic (each
    // request ends as the next starts) kept twice the limit running long after the requests
    // the loss forgot had ended, and a second loss made it three times.
    const now = 5_000
    const limit = 2
    const rule: RuleInput = { id: 'slots', algorithm: 'concurrency', limit, key: ['ip'] }
    const { limiter, store, prefix } = await redisLimiter([rule], () => now)
    try {
      const ip = '203.0.113.9'
      const running: Decision[] = []
      const admit = async (): Promise<boolean> => {
        const d = await limiter.check(facts(ip))
        if (d.allowed) running.push(d)
        return d.allowed
      }
      const end = async (): Promise<void> => {
        limiter.release(running.shift()!)
        await drain(store, limiter, now)
      }
      expect([await admit(), await admit()]).toEqual([true, true])
      await loseKeys(admin, prefix, [true])
      // The loss forgets the two running requests: two more are admitted (2x, documented).
      expect([await admit(), await admit(), await admit()]).toEqual([true, true, false])
      // The two forgotten requests end; from here the limit must hold.
      await end()
      await end()
      expect(running.length).toBe(limit)
      for (let i = 0; i < 5; i++) {
        expect(await admit(), `turnover ${i}: ${running.length} running`).toBe(false)
        await end()
        expect(await admit()).toBe(true)
      }
      expect(running.length).toBe(limit)
      // A second loss forgets what runs now, and no more: 2x again, never 3x.
      await loseKeys(admin, prefix, [true])
      expect([await admit(), await admit(), await admit()]).toEqual([true, true, false])
      expect(running.length).toBe(2 * limit)
    } finally {
      await limiter.close()
    }
  })

  it('every algorithm, ban, penalty, reward and reset survive random key losses, and heal to a fresh state', async () => {
    const rules: RuleInput[] = [
      {
        id: 'tb',
        algorithm: 'token-bucket',
        limit: 3,
        window: 1000,
        key: ['ip'],
        ban: { after: 2, within: 2000, for: 3000 },
      },
      { id: 'fw', algorithm: 'fixed-window', limit: 5, window: 1000, key: ['ip'] },
      { id: 'swl', algorithm: 'sliding-window-log', limit: 4, window: 1000, key: ['ip'] },
      { id: 'swc', algorithm: 'sliding-window-counter', limit: 4, window: 1000, key: ['ip'] },
      { id: 'gcra', algorithm: 'gcra', limit: 3, window: 1000, key: ['ip'] },
      { id: 'lb', algorithm: 'leaky-bucket', limit: 3, window: 1000, key: ['ip'] },
      { id: 'conc', algorithm: 'concurrency', limit: 2, key: ['ip'] },
    ]
    const rateRules = ['tb', 'fw', 'swl', 'swc', 'gcra', 'lb']
    const clients = ['192.0.2.1', '192.0.2.2']
    type Op =
      | { kind: 'check'; client: number }
      | { kind: 'limit'; client: number; rule: number; cost: number }
      | { kind: 'release'; pick: number }
      | { kind: 'penalty'; client: number; debt: boolean; units: number }
      | { kind: 'reward'; client: number; rule: number; units: number }
      | { kind: 'reset'; client: number }
      | { kind: 'advance'; ms: number }
      | { kind: 'lose'; pick: boolean[] }
    const client = fc.nat(clients.length - 1)
    const op: fc.Arbitrary<Op> = fc.oneof(
      { weight: 5, arbitrary: fc.record({ kind: fc.constant('check' as const), client }) },
      {
        weight: 3,
        arbitrary: fc.record({
          kind: fc.constant('limit' as const),
          client,
          rule: fc.nat(rateRules.length - 1),
          cost: fc.constantFrom(1, 2, 0.5, 4),
        }),
      },
      {
        weight: 3,
        arbitrary: fc.record({ kind: fc.constant('release' as const), pick: fc.nat() }),
      },
      {
        weight: 1,
        arbitrary: fc.record({
          kind: fc.constant('penalty' as const),
          client,
          debt: fc.boolean(),
          units: fc.integer({ min: 1, max: 6 }),
        }),
      },
      {
        weight: 1,
        arbitrary: fc.record({
          kind: fc.constant('reward' as const),
          client,
          rule: fc.nat(rateRules.length - 1),
          units: fc.integer({ min: 1, max: 3 }),
        }),
      },
      { weight: 1, arbitrary: fc.record({ kind: fc.constant('reset' as const), client }) },
      {
        weight: 2,
        arbitrary: fc.record({
          kind: fc.constant('advance' as const),
          ms: fc.integer({ min: 1, max: 1500 }),
        }),
      },
      {
        weight: 2,
        arbitrary: fc.record({
          kind: fc.constant('lose' as const),
          pick: fc.array(fc.boolean(), { minLength: 1, maxLength: 7 }),
        }),
      },
    )
    await fc.assert(
      fc.asyncProperty(fc.array(op, { minLength: 10, maxLength: 50, size: 'max' }), async (ops) => {
        let now = 1_700_000_000_000
        const clock = (): number => now
        const { limiter, store, prefix, log } = await redisLimiter(rules, clock)
        const fresh = createLimiter({ rules, store: new MemoryStore(), clock })
        try {
          const held: Decision[] = []
          for (const o of ops) {
            if (o.kind === 'check') {
              const d = await limiter.check(facts(clients[o.client]!))
              if (d.allowed) held.push(d)
            } else if (o.kind === 'limit') {
              await limiter.limit(clients[o.client]!, { rule: rateRules[o.rule]!, cost: o.cost })
            } else if (o.kind === 'release') {
              if (held.length > 0) limiter.release(held.splice(o.pick % held.length, 1)[0]!)
            } else if (o.kind === 'penalty') {
              await limiter.penalty(clients[o.client]!, o.units, { rule: o.debt ? 'tb' : 'gcra' })
            } else if (o.kind === 'reward') {
              await limiter.reward(clients[o.client]!, o.units, { rule: rateRules[o.rule]! })
            } else if (o.kind === 'reset') {
              await limiter.reset(clients[o.client]!)
            } else if (o.kind === 'advance') {
              now += o.ms
            } else {
              await loseKeys(admin, prefix, o.pick)
            }
            await drain(store, limiter, now)
            await expectAllExpire(admin, prefix, `after ${o.kind}`)
          }
          // Heal: every holder gone, and longer than any debt, ban or window takes to pass.
          for (const d of held.splice(0)) limiter.release(d)
          await drain(store, limiter, now)
          now += 10 * 60_000
          // From here the store answers exactly as a fresh MemoryStore does.
          for (let i = 0; i < 12; i++) {
            const ip = clients[i % clients.length]!
            const [got, want] = [await limiter.check(facts(ip)), fresh.check(facts(ip)) as Decision]
            const view = (d: Decision) =>
              d.outcomes.map((x) => [x.rule.id, x.allowed, x.remaining, x.banned === true])
            expect(view(got), `probe ${i}`).toEqual(view(want))
            if (i % 3 === 2) now += 100
          }
          expect(log.lines).toEqual([])
        } finally {
          await limiter.close()
          await fresh.close()
        }
      }),
      { numRuns: 30 },
    )
  })

  it('SyncedStore: fleet counters lost between syncs fail no sync, always expire, and leave hosts that heal to fresh', async () => {
    const rule: RuleInput = {
      id: 'tb',
      algorithm: 'token-bucket',
      limit: 5,
      window: 1000,
      key: ['ip'],
    }
    const clients = ['192.0.2.7', '192.0.2.8']
    type Op =
      | { kind: 'check'; host: number; client: number }
      | { kind: 'sync'; host: number }
      | { kind: 'penalty'; host: number; client: number; units: number }
      | { kind: 'advance'; ms: number }
      | { kind: 'lose'; pick: boolean[] }
    const host = fc.nat(1)
    const client = fc.nat(clients.length - 1)
    const op: fc.Arbitrary<Op> = fc.oneof(
      { weight: 5, arbitrary: fc.record({ kind: fc.constant('check' as const), host, client }) },
      { weight: 3, arbitrary: fc.record({ kind: fc.constant('sync' as const), host }) },
      {
        weight: 1,
        arbitrary: fc.record({
          kind: fc.constant('penalty' as const),
          host,
          client,
          units: fc.integer({ min: 1, max: 8 }),
        }),
      },
      {
        weight: 1,
        arbitrary: fc.record({
          kind: fc.constant('advance' as const),
          ms: fc.integer({ min: 1, max: 800 }),
        }),
      },
      {
        weight: 2,
        arbitrary: fc.record({
          kind: fc.constant('lose' as const),
          pick: fc.array(fc.boolean(), { minLength: 1, maxLength: 3 }),
        }),
      },
    )
    await fc.assert(
      fc.asyncProperty(fc.array(op, { minLength: 10, maxLength: 40, size: 'max' }), async (ops) => {
        let now = 1_700_000_000_000
        const clock = (): number => now
        const prefix = `kl${++run}`
        const log = recordingLogger()
        // Syncs only when the test says: the timers' interval is longer than the test.
        const stores = [0, 1].map(() =>
          createSyncedStore({ url: server.url, prefix, syncMs: 3_600_000, clock, logger: log }),
        )
        await Promise.all(stores.map((s) => s.ready))
        const limiters = stores.map((store) =>
          createLimiter({ rules: [rule], store, clock, logger: log }),
        )
        try {
          for (const o of ops) {
            if (o.kind === 'check') await limiters[o.host]!.check(facts(clients[o.client]!))
            else if (o.kind === 'sync') await stores[o.host]!.syncNow()
            else if (o.kind === 'penalty') {
              await limiters[o.host]!.penalty(clients[o.client]!, o.units)
            } else if (o.kind === 'advance') now += o.ms
            else await loseKeys(admin, prefix, o.pick)
            await expectAllExpire(admin, prefix, `after ${o.kind}`)
          }
          expect(stores.map((s) => s.failedSyncs)).toEqual([0, 0])
          // Heal: every counter lost at once, then long enough for any debt to be paid.
          await loseKeys(admin, prefix, [true])
          now += 10 * 60_000
          await stores[0]!.syncNow()
          await expectAllExpire(admin, prefix, 'after the heal')
          // One host serving alone answers exactly as a fresh MemoryStore does.
          const fresh = createLimiter({ rules: [rule], store: new MemoryStore(), clock })
          for (let i = 0; i < 12; i++) {
            const ip = clients[i % clients.length]!
            const got = (await limiters[0]!.check(facts(ip))).remaining
            expect(got, `probe ${i}`).toBe((fresh.check(facts(ip)) as Decision).remaining)
            if (i % 4 === 3) await stores[0]!.syncNow()
          }
          expect(stores.map((s) => s.failedSyncs)).toEqual([0, 0])
          expect(log.lines).toEqual([])
        } finally {
          await Promise.all(limiters.map((l) => l.close()))
        }
      }),
      { numRuns: 25 },
    )
  })

  // Every policy that evicts: Floodgate keys all have a TTL, so the volatile-* ones may evict
  // them too, and a Redis that never gets to evict must not fail a call.
  it.each([
    'allkeys-lru',
    'allkeys-lfu',
    'allkeys-random',
    'volatile-ttl',
    'volatile-lru',
    'volatile-lfu',
    'volatile-random',
  ])(
    'under maxmemory with %s, a flood of clients evicts keys without an error, and a client admits at most one more limit per loss',
    async (policy) => {
      const small = await RedisServer.start(['--maxmemory', '2mb', '--maxmemory-policy', policy])
      const watch = new Redis(small.port, '127.0.0.1')
      const log = recordingLogger()
      const prefix = 'lru'
      const store = createRedisStore({
        url: small.url,
        prefix,
        timeSource: 'caller',
        callTimeoutMs: 2000,
        logger: log,
      })
      const now = 1_700_000_000_000
      const limit = 10
      const rules: RuleInput[] = [
        { id: 'fw', algorithm: 'fixed-window', limit, window: '1h', key: ['ip'] },
        { id: 'conc', algorithm: 'concurrency', limit, key: ['ip'] },
      ]
      const limiter = createLimiter({
        rules,
        store,
        clock: () => now,
        logger: log,
        decisionTimeoutMs: 2000,
      })
      try {
        await store.ready
        const hot = '203.0.113.200'
        const hotTag = redisKey(prefix, hot, '')
        let admitted = 0
        let losses = 0
        let mine: string[] = []
        for (let round = 0; round < 50; round++) {
          // The hot client's keys: any that vanished since it last wrote them is one loss.
          if (mine.length > 0 && (await watch.exists(...mine)) < mine.length) losses++
          const d = await limiter.check(facts(hot))
          if (d.allowed) admitted++ // held, never released: its slot stays taken
          if (mine.length === 0) {
            mine = (await keysUnder(watch, prefix)).filter((k) => k.startsWith(hotTag))
          }
          expect(admitted, `round ${round}`).toBeLessThanOrEqual(limit * (1 + losses))
          // 200 other clients, each admitted once and released at once.
          const flood = await Promise.all(
            Array.from({ length: 200 }, async (_, i) =>
              limiter.check(facts(`10.${round}.${i >> 8}.${i & 255}`)),
            ),
          )
          for (const f of flood) limiter.release(f)
          expect(flood.every((f) => f.allowed)).toBe(true)
        }
        const stats = await watch.info('stats')
        const evicted = Number(/evicted_keys:(\d+)/.exec(stats)?.[1] ?? 0)
        expect(evicted, 'the flood must make Redis evict').toBeGreaterThan(0)
        await expectAllExpire(watch, prefix, 'under eviction')
        expect(log.lines).toEqual([])
      } finally {
        await limiter.close()
        watch.disconnect()
        await small.stop()
      }
    },
    60_000,
  )

  it('named leases stay readable by a host of the previous version, and its unnamed leases here', async () => {
    const now = 7_000
    const rule: RuleInput = { id: 'slots', algorithm: 'concurrency', limit: 3, key: ['ip'] }
    const { limiter, store, prefix } = await redisLimiter([rule], () => now)
    try {
      const ip = '203.0.113.10'
      const a = await limiter.check(facts(ip))
      const b = await limiter.check(facts(ip))
      const [key] = await keysUnder(admin, prefix)
      const raw = (await admin.getBuffer(key!))!
      // The previous version's reading: (expiry, units) pairs, live when the expiry is ahead.
      let inFlight = 0
      for (let o = 0; o + 16 <= raw.length; o += 16) {
        const [expiry, units] = [raw.readDoubleLE(o), raw.readDoubleLE(o + 8)]
        if (expiry > now && units > 0) inFlight += units
      }
      expect(inFlight).toBe(2)
      // A lease of the previous version (no name pair) counts here, and an unnamed release frees it.
      const legacy = Buffer.alloc(16)
      legacy.writeDoubleLE(now + 60_000, 0)
      legacy.writeDoubleLE(1, 8)
      await admin.set(key!, Buffer.concat([raw, legacy]), 'PX', 60_000)
      expect((await limiter.check(facts(ip))).allowed).toBe(false)
      const compiled = limiter.compileRules([{ ...rule, id: 'other' }]).rules[0]!
      await store.refund(
        [{ rule: { ...compiled, stateId: key!.split(':').slice(2).join(':') }, key: ip, cost: 1 }],
        now,
      )
      const c = await limiter.check(facts(ip))
      expect(c.allowed).toBe(true)
      // That release freed the oldest lease, a's: a's own release then frees nothing, and the
      // lease left counts until it expires (stricter, never looser).
      for (const d of [a, b, c]) limiter.release(d)
      await drain(store, limiter, now)
      const after = await Promise.all([1, 2, 3].map(async () => limiter.check(facts(ip))))
      expect(after.map((d) => d.allowed)).toEqual([true, true, false])
    } finally {
      await limiter.close()
    }
  })
})

/**
 * Let the releases sent so far land in Redis: a store call made after them rides the same
 * connection (or the same script call), so once it is answered they have been applied.
 */
async function drain(store: Store, limiter: Limiter, now: number): Promise<void> {
  const rule = limiter.compileRules([{ id: 'drain', limit: 1, window: 1000 }]).rules[0]!
  await store.peek!([{ rule, key: 'drain' }], now)
}
