import fc from 'fast-check'
import { Redis } from 'ioredis'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { MemoryStore } from '@floodgate/core'
import { algorithms, type AlgorithmName, type ConsumeEntry } from '@floodgate/core/algorithms'
import { testRule } from '@floodgate/core/testing'
import { RedisStore, createRedisStore, redisKey } from '@floodgate/redis'
import { MAX_TTL_MS } from '../src/key-ttl.js'
import { hashTag } from '../src/redis-key.js'
import { decideScript } from '../src/scripts/decide-script.js'
import { REDIS_URL, deletePrefix, redisAvailable, uniquePrefix } from './helpers/redis.js'
import { answers } from './helpers/results.js'

const available = await redisAvailable()
const prefix = uniquePrefix('store')

const ALGORITHMS: AlgorithmName[] = [
  'token-bucket',
  'gcra',
  'fixed-window',
  'sliding-window-log',
  'sliding-window-counter',
  'leaky-bucket',
  'concurrency',
]

describe('the Lua ports', () => {
  it('cover every algorithm core ships (a new one must get its port)', () => {
    expect(Object.keys(algorithms).sort()).toEqual([...ALGORITHMS].sort())
    const lua = decideScript()
    const sorted = [...ALGORITHMS].sort()
    // The table of the algorithms' functions, in the order of their indexes.
    let at = lua.indexOf('ALG, out, S2, S3 = {')
    expect(at).toBeGreaterThan(0)
    for (const name of sorted) {
      const next = lua.indexOf(`-- ${name}\nfunction(`, at)
      expect(next, name).toBeGreaterThan(at)
      at = next
    }
  })
})

describe.skipIf(!available)('RedisStore on a single Redis', () => {
  let admin: Redis
  let store: RedisStore

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

  // The Lua ports must answer exactly what core's TypeScript answers, field by field, for
  // every algorithm, with reservations, refunds and several rules per request.
  for (const algorithm of ALGORITHMS) {
    it(`answers exactly as MemoryStore: ${algorithm}`, async () => {
      await fc.assert(
        fc.asyncProperty(
          fc.integer({ min: 1, max: 12 }),
          fc.constantFrom(7, 100, 333, 1000, 60_000),
          fc.integer({ min: 0, max: 3 }),
          fc.array(
            fc.record({
              dt: fc.integer({ min: 0, max: 700 }),
              cost: fc.constantFrom(1, 1, 1, 2, 3, 0.5),
              maxWaitMs: fc.constantFrom(0, 0, 50, 400),
              refund: fc.constantFrom(false, false, false, true),
            }),
            { minLength: 1, maxLength: 25 },
          ),
          async (limit, windowMs, extraBurst, steps) => {
            const rule = testRule(algorithm, limit, windowMs, { burst: limit + extraBurst })
            const mem = new MemoryStore()
            const key = `k-${Math.random()}`
            let now = 1_763_000_000_000
            for (const s of steps) {
              now += s.dt
              const e: ConsumeEntry[] = [
                { rule, key, cost: s.cost, maxWaitMs: s.maxWaitMs, shadow: false },
              ]
              const want = answers(mem.consume(e, now))
              const got = answers(await store.consume(e, now))
              expect(got).toEqual(want)
              if (s.refund) {
                mem.refund(e, now)
                await store.refund(e, now)
              }
            }
          },
        ),
        { numRuns: Number(process.env.FG_RUNS ?? 25) },
      )
    })
  }

  // The wall clock may step back (NTP, a VM resumed) by any amount. A state back to fresh
  // holds no time in either store (Redis deletes it), so a later step back must find both
  // stores alike: MemoryStore once kept the fresh state's time and stood still at it where
  // Redis had forgotten it (resetMs 15767999999 against 15768000000 on a 182.5-day window).
  for (const algorithm of ALGORITHMS) {
    it(`answers exactly as MemoryStore when the clock steps back: ${algorithm}`, async () => {
      await fc.assert(
        fc.asyncProperty(
          fc.integer({ min: 1, max: 6 }),
          fc.constantFrom(7, 100, 1000, 15_768_000_000),
          fc.array(
            fc.record({
              back: fc.boolean(),
              dt: fc.integer({ min: 0, max: 700 }),
              cost: fc.constantFrom(1, 1, 2, 0, 0.5),
              maxWaitMs: fc.constantFrom(0, 0, 50),
              refund: fc.constantFrom(false, true),
            }),
            { minLength: 1, maxLength: 25 },
          ),
          async (limit, windowMs, steps) => {
            const rule = testRule(algorithm, limit, windowMs)
            const mem = new MemoryStore()
            const key = `k-${Math.random()}`
            let now = 1_763_000_000_000
            for (const [i, s] of steps.entries()) {
              now += s.back ? -s.dt * 7 : s.dt
              const e: ConsumeEntry[] = [
                { rule, key, cost: s.cost, maxWaitMs: s.maxWaitMs, shadow: false },
              ]
              expect(answers(await store.consume(e, now)), `step ${i}`).toEqual(
                answers(mem.consume(e, now)),
              )
              if (s.refund) {
                mem.refund(e, now)
                await store.refund(e, now)
              }
            }
          },
        ),
        { numRuns: Number(process.env.FG_RUNS ?? 25) * 2 },
      )
    })
  }

  // Large limits and fractional costs: float noise outgrows EPSILON there, and `remaining`
  // must still be what the next request can take, in Lua as in TypeScript.
  for (const algorithm of ALGORITHMS.filter((a) => a !== 'sliding-window-log')) {
    it(`answers exactly as MemoryStore with large limits and fractional costs: ${algorithm}`, async () => {
      await fc.assert(
        fc.asyncProperty(
          fc.integer({ min: 1, max: 1e9 }),
          fc.integer({ min: 1, max: 2 ** 31 - 1 }),
          fc.array(
            fc.record({
              dt: fc.integer({ min: 0, max: 5000 }),
              fraction: fc.oneof(
                fc.constantFrom(0, 1e-9, 0.1, 0.3, 1 / 3, 0.5, 1),
                fc.double({ min: 0, max: 1.1, noNaN: true }),
              ),
            }),
            { minLength: 1, maxLength: 8 },
          ),
          async (limit, windowMs, steps) => {
            const rule = testRule(algorithm, limit, windowMs)
            const mem = new MemoryStore()
            const key = `k-${Math.random()}`
            let now = 1_763_000_000_000
            for (const s of steps) {
              now += s.dt
              const e: ConsumeEntry[] = [
                { rule, key, cost: s.fraction * limit, maxWaitMs: 0, shadow: false },
              ]
              expect(answers(await store.consume(e, now))).toEqual(answers(mem.consume(e, now)))
            }
          },
        ),
        {
          numRuns: Number(process.env.FG_RUNS ?? 25) * 4,
          // A state whose life (2e-9 units at 2 per ms: a nanosecond) rounds away when added to
          // an epoch in ms: Redis deleted it while MemoryStore kept it, and at the same
          // millisecond they answered remaining 2 and 1.
          examples: [
            [
              2,
              1,
              [
                { dt: 0, fraction: 1e-9 },
                { dt: 0, fraction: 0 },
              ],
            ],
          ],
        },
      )
    })
  }

  it('decides rules of different algorithms in one call, all or nothing, as MemoryStore does', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(
          fc.record({
            algorithm: fc.constantFrom(...ALGORITHMS),
            limit: fc.integer({ min: 1, max: 5 }),
            shadow: fc.boolean(),
            otherKey: fc.boolean(),
          }),
          { minLength: 2, maxLength: 4 },
        ),
        fc.array(fc.integer({ min: 0, max: 300 }), { minLength: 1, maxLength: 15 }),
        async (specs, dts) => {
          const mem = new MemoryStore()
          const tag = Math.random()
          const entries: ConsumeEntry[] = specs.map((s) => ({
            rule: testRule(s.algorithm, s.limit, 1000, { shadow: s.shadow }),
            key: s.otherKey ? `user-${tag}` : `ip-${tag}`,
            cost: 1,
            maxWaitMs: 0,
            shadow: s.shadow,
          }))
          let now = 5_000
          for (const dt of dts) {
            now += dt
            expect(answers(await store.consume(entries, now))).toEqual(
              answers(mem.consume(entries, now)),
            )
          }
        },
      ),
      { numRuns: Number(process.env.FG_RUNS ?? 30) },
    )
  })

  it('keeps every rule of a client in one hash tag, whatever braces the key holds', () => {
    for (const key of ['}evil', '{evil}', 'a}b{c', '{}', '}', '', '203.0.113.7']) {
      const tag = hashTag(key)
      expect(tag).toMatch(/^[A-Za-z0-9_-]{22}$/)
      expect(redisKey('fg', key, 'r1')).toBe(`fg:{${tag}}:r1`)
      expect(redisKey('fg', key, 'r2:{x}')).toBe(`fg:{${tag}}:r2:{x}`)
    }
    expect(hashTag('}evil')).not.toBe(hashTag('evil'))
  })

  it('keeps the state of distinct client keys apart, whatever UTF-16 they hold (property)', async () => {
    // A key from a JSON body can hold a lone surrogate; hashed as UTF-8, every lone surrogate
    // became U+FFFD, so 'bob\uD800', 'bob\uDFFF' and 'bob\uFFFD' shared one state.
    const codeUnit = fc.oneof(
      fc.integer({ min: 0xd800, max: 0xdfff }).map((c) => String.fromCharCode(c)),
      fc.constant('\uFFFD'),
    )
    await fc.assert(
      fc.asyncProperty(
        fc.string({ unit: 'binary', maxLength: 6 }),
        fc.string({ unit: 'binary', maxLength: 6 }),
        codeUnit,
        codeUnit,
        async (before, after, u, v) => {
          fc.pre(u !== v)
          const rule = testRule('token-bucket', 1, 60_000)
          const [k1, k2] = [before + u + after, before + v + after]
          const entry = (key: string): ConsumeEntry[] => [
            { rule, key, cost: 1, maxWaitMs: 0, shadow: false },
          ]
          expect((await store.consume(entry(k1), 1000))[0]!.allowed).toBe(true)
          expect((await store.consume(entry(k2), 1000))[0]!.allowed).toBe(true)
          expect(hashTag(k1)).not.toBe(hashTag(k2))
        },
      ),
      { numRuns: 50 },
    )
    // Well-formed keys keep the tag they always had (a deployment's keys do not move).
    expect(hashTag('203.0.113.7')).toBe('_sUlZaoM8Y9X189bOscoUD')
  })

  it('gives every key a TTL equal to its useful life, and deletes state that is fresh again', async () => {
    const rule = testRule('token-bucket', 10, 1000)
    const key = 'ttl-client'
    const redisTime = createRedisStore({ url: REDIS_URL, prefix })
    await redisTime.ready
    try {
      await redisTime.consume([{ rule, key, cost: 4, maxWaitMs: 0, shadow: false }], 0)
      // 4 tokens refill in 400 ms (Redis TIME, no slack).
      const ttl = await admin.pttl(redisKey(prefix, key, rule.stateId))
      expect(ttl).toBeGreaterThan(0)
      expect(ttl).toBeLessThanOrEqual(400)
      await redisTime.refund([{ rule, key, cost: 4 }], 0)
      expect(await admin.exists(redisKey(prefix, key, rule.stateId))).toBe(0)
    } finally {
      await redisTime.close()
    }
  })

  it('sets a TTL of any length Redis takes: a debt that lasts centuries keeps its key', async () => {
    // Redis writes a Lua number of 1e17 or more as "1e+17" and refuses such a PX; the script
    // passes whole numbers as integers.
    const rule = testRule('token-bucket', 1, 2 ** 31 - 1)
    const key = 'long-debt'
    const redisTime = createRedisStore({ url: REDIS_URL, prefix })
    await redisTime.ready
    try {
      await redisTime.penalize([{ rule, key, cost: 100_000_000 }], 0)
      const ttl = await admin.pttl(redisKey(prefix, key, rule.stateId))
      expect(ttl).toBeGreaterThan(100_000_000 * (2 ** 31 - 1) - 60_000)
      expect(ttl).toBeLessThanOrEqual(100_000_000 * (2 ** 31 - 1))
    } finally {
      await redisTime.close()
    }
  })

  it('keeps state whose useful life is past what Redis can hold, capped, never refusing the call (property)', async () => {
    // A penalty of Number.MAX_SAFE_INTEGER units (a ban for good), or a burst that takes longer
    // than 2^63 ms to refill: Redis refuses such a PX, which failed the call (and the batch
    // around it): the penalty was lost and the client admitted.
    const daily = testRule('token-bucket', 1, 86_400_000)
    const banned: ConsumeEntry[] = [
      { rule: daily, key: 'banned', cost: 1, maxWaitMs: 0, shadow: false },
    ]
    await store.penalize([{ rule: daily, key: 'banned', cost: Number.MAX_SAFE_INTEGER }], 0)
    expect((await store.consume(banned, 1))[0]!.allowed).toBe(false)
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom<AlgorithmName>('token-bucket', 'gcra'),
        fc.integer({ min: 1, max: 1000 }),
        fc.integer({ min: 1, max: 2 ** 31 - 1 }),
        fc.oneof(fc.constant(0), fc.integer({ min: 0, max: Number.MAX_SAFE_INTEGER - 1000 })),
        fc.oneof(
          fc.constant(Number.MAX_SAFE_INTEGER),
          fc.integer({ min: 1, max: Number.MAX_SAFE_INTEGER }),
        ),
        async (algorithm, limit, windowMs, extraBurst, units) => {
          const rule = testRule(algorithm, limit, windowMs, { burst: limit + extraBurst })
          const key = `huge-${Math.random()}`
          const mem = new MemoryStore()
          const now = 1_700_000_000_000
          const first: ConsumeEntry[] = [
            { rule, key, cost: rule.params.burst, maxWaitMs: 0, shadow: false },
          ]
          expect(answers(await store.consume(first, now))).toEqual(answers(mem.consume(first, now)))
          await store.penalize([{ rule, key, cost: units }], now)
          mem.penalize([{ rule, key, cost: units }], now)
          const next: ConsumeEntry[] = [{ rule, key, cost: 1, maxWaitMs: 0, shadow: false }]
          const got = answers(await store.consume(next, now))
          expect(got).toEqual(answers(mem.consume(next, now)))
          expect(got[0]!.allowed).toBe(false)
          const ttl = await admin.pttl(redisKey(prefix, key, rule.stateId))
          expect(ttl).toBeGreaterThan(0)
          expect(ttl).toBeLessThanOrEqual(MAX_TTL_MS)
        },
      ),
      { numRuns: 40 },
    )
  })

  it('reads a state of the right size whose numbers are not its own (NaN) as fresh, and replaces it', async () => {
    // Someone else's 16 bytes under the prefix: the state's life is NaN, which Redis refuses
    // as a PX (every request of the client failed open), and which a cap would keep forever.
    const rule = testRule('token-bucket', 10, 1000)
    const key = 'garbled-state'
    const garbage = Buffer.alloc(16)
    garbage.writeDoubleLE(5, 0)
    garbage.writeDoubleLE(Number.NaN, 8)
    await admin.set(redisKey(prefix, key, rule.stateId), garbage)
    const e: ConsumeEntry[] = [{ rule, key, cost: 1, maxWaitMs: 0, shadow: false }]
    // The first request is decided as a fresh client's, and the state is ours from then on.
    expect(await store.consume(e, 1000)).toMatchObject([{ allowed: true, remaining: 9 }])
    expect(await store.consume(e, 1000)).toMatchObject([{ allowed: true, remaining: 8 }])
    expect(await admin.pttl(redisKey(prefix, key, rule.stateId))).toBeGreaterThan(0)
  })

  it("a key of another type under one client's name neither fails the requests batched with it nor its own (property)", async () => {
    // Someone else's hash, list, set, zset or stream at a Floodgate key: GET raised WRONGTYPE,
    // which aborted the whole script, so every request sharing the batch (other clients')
    // passed unjudged, on every batch, until the key went away. It now reads as fresh.
    const writers: Record<string, (key: string) => Promise<unknown>> = {
      hash: (k) => admin.hset(k, 'f', '1'),
      list: (k) => admin.rpush(k, 'a'),
      set: (k) => admin.sadd(k, 'a'),
      zset: (k) => admin.zadd(k, 1, 'a'),
      stream: (k) => admin.xadd(k, '*', 'f', '1'),
    }
    let run = 0
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom(...Object.keys(writers)),
        fc.constantFrom(...ALGORITHMS),
        fc.array(fc.integer({ min: 0, max: 3 }), { minLength: 2, maxLength: 20 }),
        fc.integer({ min: 0, max: 3 }),
        async (type, alg, clients, poisoned) => {
          run++
          const rule = testRule(alg, 3, 60_000)
          const keyOf = (c: number): string => `wrongtype-${run}-${c}`
          await writers[type]!(redisKey(prefix, keyOf(poisoned), rule.stateId))
          const mem = new MemoryStore()
          const entry = (c: number): ConsumeEntry[] => [
            { rule, key: keyOf(c), cost: 1, maxWaitMs: 0, shadow: false },
          ]
          // Started together: they share script calls, the poisoned client's among them.
          const got = await Promise.all(clients.map((c) => store.consume(entry(c), 1000)))
          const want = clients.map((c) => answers(mem.consume(entry(c), 1000)))
          expect(got.map(answers)).toEqual(want)
        },
      ),
      { numRuns: 25 },
    )
  })

  it('concurrency slots live in leases that expire (a crashed host frees its slots)', async () => {
    const rule = testRule('concurrency', 2, 1000)
    const leased = createRedisStore({
      url: REDIS_URL,
      prefix,
      timeSource: 'caller',
      concurrencyLeaseMs: 5000,
    })
    await leased.ready
    try {
      const e: ConsumeEntry[] = [{ rule, key: 'lease', cost: 1, maxWaitMs: 0, shadow: false }]
      expect((await leased.consume(e, 0))[0]!.allowed).toBe(true)
      expect((await leased.consume(e, 1000))[0]!.allowed).toBe(true)
      expect((await leased.consume(e, 4999))[0]!.allowed).toBe(false)
      // The first lease (taken at 0) has expired at 5000; the second lives until 6000.
      expect(await leased.consume(e, 5000)).toMatchObject([{ allowed: true, remaining: 0 }])
      // A release gives back the oldest live lease first.
      await leased.refund(e, 5001)
      expect(await leased.consume(e, 5002)).toMatchObject([{ allowed: true, remaining: 0 }])
      const ttl = await admin.pttl(redisKey(prefix, 'lease', rule.stateId))
      expect(ttl).toBeGreaterThan(0)
    } finally {
      await leased.close()
    }
  })

  it('uses Redis TIME by default: the nowMs of a skewed app host is ignored', async () => {
    const rule = testRule('fixed-window', 3, 60_000)
    const a = createRedisStore({ url: REDIS_URL, prefix })
    await a.ready
    try {
      const e: ConsumeEntry[] = [{ rule, key: 'skew', cost: 1, maxWaitMs: 0, shadow: false }]
      // Hosts an hour apart still share one window.
      const r1 = await a.consume(e, Date.now() - 3_600_000)
      const r2 = await a.consume(e, Date.now() + 3_600_000)
      expect(r1[0]!.remaining).toBe(2)
      expect(r2[0]!.remaining).toBe(1)
    } finally {
      await a.close()
    }
  })

  it('reloads its script after SCRIPT FLUSH without an error reaching the caller', async () => {
    const rule = testRule('token-bucket', 100, 1000)
    const e: ConsumeEntry[] = [{ rule, key: 'flush', cost: 1, maxWaitMs: 0, shadow: false }]
    await store.consume(e, 1)
    await admin.script('FLUSH')
    expect((await store.consume(e, 2))[0]!.remaining).toBe(98)
  })

  it('works with a client the application already has, and leaves it open', async () => {
    const own = new Redis(REDIS_URL, { enableOfflineQueue: false, maxRetriesPerRequest: 0 })
    await new Promise((r) => own.once('ready', r))
    const shared = new RedisStore({ client: own, prefix })
    const rule = testRule('gcra', 2, 1000)
    const e: ConsumeEntry[] = [{ rule, key: 'shared', cost: 1, maxWaitMs: 0, shadow: false }]
    expect((await shared.consume(e, 0)).map((r) => r.allowed)).toEqual([true])
    // A second store on the same client shares its connection and its state.
    const again = new RedisStore({ client: own, prefix })
    expect((await again.consume(e, 0)).map((r) => r.allowed)).toEqual([true])
    expect((await again.consume(e, 0)).map((r) => r.allowed)).toEqual([false])
    await shared.close()
    expect(await own.ping()).toBe('PONG')
    own.disconnect()
  })

  it("applies a client's keyPrefix to the keys, as ioredis does to any command's", async () => {
    const own = new Redis(REDIS_URL, {
      keyPrefix: `${prefix}:kp:`,
      enableOfflineQueue: false,
      maxRetriesPerRequest: 0,
      autoResendUnfulfilledCommands: false,
    })
    await new Promise((r) => own.once('ready', r))
    const s = new RedisStore({ client: own, prefix })
    const rule = testRule('token-bucket', 5, 1000)
    const e: ConsumeEntry[] = [{ rule, key: 'kp', cost: 2, maxWaitMs: 0, shadow: false }]
    await s.consume(e, 0)
    await admin.script('FLUSH') // the resend after NOSCRIPT is prefixed once, not twice
    expect((await s.consume(e, 0))[0]!.remaining).toBe(1)
    expect(await admin.exists(`${prefix}:kp:${redisKey(prefix, 'kp', rule.stateId)}`)).toBe(1)
    expect(await admin.exists(redisKey(prefix, 'kp', rule.stateId))).toBe(0)
    await s.close()
    own.disconnect()
  })

  it('tells the limiter it settles within callTimeoutMs unless an asynchronous fallback may add to it', async () => {
    const asyncFallback = { consume: () => Promise.resolve([]), refund: () => {} }
    const stores = [
      createRedisStore({ url: REDIS_URL, prefix, callTimeoutMs: 40 }),
      createRedisStore({ url: REDIS_URL, prefix, callTimeoutMs: 40, fallback: new MemoryStore() }),
      createRedisStore({ url: REDIS_URL, prefix, callTimeoutMs: 40, fallback: asyncFallback }),
    ]
    expect(stores.map((s) => s.settlesWithinMs)).toEqual([40, 40, undefined])
    await Promise.all(stores.map((s) => s.close()))
  })

  it('refuses bad options at construction', () => {
    expect(() => new RedisStore({ url: REDIS_URL, prefix: 'a{b' })).toThrow(/prefix/)
    expect(() => new RedisStore({ url: REDIS_URL, callTimeoutMs: 0 })).toThrow(/callTimeoutMs/)
    expect(() => new RedisStore({ url: REDIS_URL, client: admin })).toThrow(/only one/)
  })
})
