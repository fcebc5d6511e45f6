import fc from 'fast-check'
import { createHash } from 'node:crypto'
import { Redis } from 'ioredis'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { MemoryStore } from '@floodgate/core'
import type { AlgorithmName, ConsumeEntry } from '@floodgate/core/algorithms'
import { testRule } from '@floodgate/core/testing'
import { createRedisStore, type RedisStore } from '@floodgate/redis'
import { loneScript } from '../src/scripts/decide-script.js'
import { REDIS_URL, deletePrefix, redisAvailable, uniquePrefix } from './helpers/redis.js'
import { RedisServer, redisBinariesAvailable } from './helpers/redis-server.js'
import { answers } from './helpers/results.js'

const available = await redisAvailable()
const prefix = uniquePrefix('lone-mix')

const sha = (lua: string): string => createHash('sha1').update(lua).digest('hex')

/** The algorithms whose lone script runs their Lua inline. */
const INLINED: readonly AlgorithmName[] = [
  'token-bucket',
  'gcra',
  'fixed-window',
  'leaky-bucket',
  'sliding-window-counter',
]
const LONE_SHAS = new Set(INLINED.map((a) => sha(loneScript(a))))

const limiterSafe = {
  enableOfflineQueue: false,
  maxRetriesPerRequest: 0,
  autoResendUnfulfilledCommands: false,
} as const

/** A client that counts the scripts it sends: lone ones and the others. */
async function countingClient(
  url: string,
): Promise<{ client: Redis; sent: { lone: number; other: number } }> {
  const client = new Redis(url, limiterSafe)
  await new Promise((r) => client.once('ready', r))
  const sent = { lone: 0, other: 0 }
  const send = client.sendCommand.bind(client)
  client.sendCommand = (cmd) => {
    if (cmd.name === 'evalsha') {
      if (LONE_SHAS.has(String(cmd.args[0]))) sent.lone++
      else sent.other++
    }
    return send(cmd)
  }
  return { client, sent }
}

/** One request of one rule, as the generator draws it. */
interface Drawn {
  key: number
  cost: number
  maxWaitMs: number
  shadow: boolean
  queueFull: boolean
}

const drawn: fc.Arbitrary<Drawn> = fc.record({
  key: fc.integer({ min: 0, max: 1 }),
  cost: fc.constantFrom(1, 1, 1, 2, 0, 0.5, 3),
  maxWaitMs: fc.constantFrom(0, 0, 0, 50, 400),
  shadow: fc.boolean(),
  queueFull: fc.boolean(),
})

/**
 * A step: a lone request (alone in flight: the lone script), requests started in one turn
 * (the first leaves alone, the others share a call of the general script), or one request
 * of two rules (the general script).
 */
const step = fc.record({
  dt: fc.constantFrom(0, 0, 1, 7, 40, 150, 333, 700, 1500, -20),
  kind: fc.constantFrom<'lone' | 'together' | 'two-rules'>('lone', 'lone', 'together', 'two-rules'),
  requests: fc.array(drawn, { minLength: 1, maxLength: 4 }),
})

describe.skipIf(!available)('lone calls and batched calls on the same keys', () => {
  let store: RedisStore
  let client: Redis
  let sent: { lone: number; other: number }
  beforeAll(async () => {
    ;({ client, sent } = await countingClient(REDIS_URL))
    store = createRedisStore({ client, prefix, timeSource: 'caller', callTimeoutMs: 2000 })
    await store.ready
  })
  afterAll(async () => {
    await store.close()
    await deletePrefix(client, prefix)
    client.disconnect()
  })

  let run = 0
  for (const algorithm of INLINED) {
    it(`answer as MemoryStore does, in any order: ${algorithm} (property)`, async () => {
      const before = { ...sent }
      await fc.assert(
        fc.asyncProperty(
          fc.integer({ min: 1, max: 6 }),
          fc.constantFrom(10, 1000, 60_000),
          fc.constantFrom(undefined, 1, 9),
          fc.array(step, { minLength: 1, maxLength: 25 }),
          async (limit, windowMs, burst, steps) => {
            run++
            const rule = testRule(algorithm, limit, windowMs, { burst: burst ?? limit })
            const model = new MemoryStore()
            const entry = (d: Drawn): ConsumeEntry => ({
              rule,
              key: `r${run}:k${d.key}`,
              cost: d.cost,
              maxWaitMs: d.maxWaitMs,
              shadow: d.shadow,
              queueFull: d.maxWaitMs > 0 && d.queueFull,
            })
            let now = 1_763_000_000_000 + run * 10_000_000
            for (const [i, s] of steps.entries()) {
              now += s.dt
              let requests: ConsumeEntry[][]
              let got: (readonly unknown[])[]
              if (s.kind === 'lone') {
                requests = [[entry(s.requests[0]!)]]
                got = [await store.consume(requests[0]!, now)]
              } else if (s.kind === 'together') {
                requests = s.requests.map((d) => [entry(d)])
                got = await Promise.all(requests.map((r) => store.consume(r, now)))
              } else {
                requests = [[entry(s.requests[0]!), entry(s.requests[1] ?? s.requests[0]!)]]
                got = [await store.consume(requests[0]!, now)]
              }
              const want = requests.map((r) => answers(model.consume(r, now)))
              expect(
                got.map((r) => answers(r as never)),
                `step ${i} (${s.kind})`,
              ).toEqual(want)
            }
          },
        ),
        { numRuns: Number(process.env.FG_RUNS ?? 40) },
      )
      // Both scripts decided: the property compared what it meant to.
      expect(sent.lone - before.lone).toBeGreaterThan(0)
      expect(sent.other - before.other).toBeGreaterThan(0)
    })
  }
})

describe.skipIf(!redisBinariesAvailable())('the lone script after SCRIPT FLUSH', () => {
  let server: RedisServer
  beforeAll(async () => {
    server = await RedisServer.start()
  })
  afterAll(async () => {
    await server?.stop()
  })

  it('is loaded again and decides once, on a Redis of its own', async () => {
    const { client, sent } = await countingClient(server.url)
    const admin = new Redis(server.url)
    const store = createRedisStore({ client, prefix: 'flush', callTimeoutMs: 2000 })
    const rule = testRule('token-bucket', 3, 60_000)
    const e: ConsumeEntry = { rule, key: 'k', cost: 1, maxWaitMs: 0, shadow: false }
    try {
      await store.ready
      expect((await store.consume([e], 0))[0]!.remaining).toBe(2)
      expect(await admin.script('FLUSH')).toBe('OK')
      expect(await admin.script('EXISTS', sha(loneScript('token-bucket')))).toEqual([0])
      // NOSCRIPT, then the same call once more as EVAL: counted once.
      expect((await store.consume([e], 0))[0]!.remaining).toBe(1)
      expect(await admin.script('EXISTS', sha(loneScript('token-bucket')))).toEqual([1])
      expect((await store.consume([e], 0))[0]!.remaining).toBe(0)
      expect((await store.consume([e], 0))[0]!.allowed).toBe(false)
      expect(sent.lone).toBeGreaterThanOrEqual(4)
      expect(sent.other).toBe(0)
    } finally {
      await store.close()
      client.disconnect()
      admin.disconnect()
    }
  })
})
