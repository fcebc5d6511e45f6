import fc from 'fast-check'
import { Redis } from 'ioredis'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { MemoryStore } from '@floodgate/core'
import { type AlgorithmName, type ConsumeEntry } from '@floodgate/core/algorithms'
import { testRule } from '@floodgate/core/testing'
import { RedisStore, redisKey } from '@floodgate/redis'
import { REDIS_URL, deletePrefix, redisAvailable, uniquePrefix } from './helpers/redis.js'
import { answers } from './helpers/results.js'

const available = await redisAvailable()
const prefix = uniquePrefix('batch')

/** A limiter-safe client whose commands are counted as they are sent. */
async function countedClient(): Promise<Redis & { sent: number }> {
  const client = new Redis(REDIS_URL, {
    enableOfflineQueue: false,
    maxRetriesPerRequest: 0,
    autoResendUnfulfilledCommands: false,
  }) as Redis & { sent: number }
  await new Promise((r) => client.once('ready', r))
  client.sent = 0
  const send = client.sendCommand.bind(client)
  client.sendCommand = (...args: Parameters<Redis['sendCommand']>) => {
    client.sent++
    return send(...args)
  }
  return client
}

describe.skipIf(!available)('RedisStore batches the requests of one event-loop turn', () => {
  let admin: Redis
  let client: Redis & { sent: number }
  let store: RedisStore

  beforeAll(async () => {
    admin = new Redis(REDIS_URL)
    client = await countedClient()
    store = new RedisStore({ client, prefix, timeSource: 'caller', callTimeoutMs: 1000 })
  })
  afterAll(async () => {
    await store.close()
    client.disconnect()
    await deletePrefix(admin, prefix)
    admin.disconnect()
  })

  it('sends a lone request at once, then one script call per 16 requests started together behind it, one per request otherwise', async () => {
    const rule = testRule('token-bucket', 1000, 1000)
    const entry = (i: number): ConsumeEntry[] => [
      { rule, key: `count-${i}`, cost: 1, maxWaitMs: 0, shadow: false },
    ]
    const before = client.sent
    const together = await Promise.all(
      Array.from({ length: 40 }, (_, i) => store.consume(entry(i), 0)),
    )
    expect(together.every((r) => r[0]!.allowed)).toBe(true)
    // The first found nothing in flight and left alone; the other 39 shared 3 calls.
    expect(client.sent - before).toBe(4)

    const alone = client.sent
    for (let i = 0; i < 5; i++) await store.consume(entry(i), 1)
    expect(client.sent - alone).toBe(5)
  })

  // Requests of one rule set started in one turn, consumes and refunds mixed: each must get
  // exactly what MemoryStore answers when the same requests run one after the other in call
  // order, so a batch changes how many calls reach Redis and nothing else.
  it('answers each request of a batch as if it ran alone, in call order, all or nothing', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom<AlgorithmName>('token-bucket', 'gcra', 'sliding-window-log', 'concurrency'),
        fc.integer({ min: 1, max: 6 }),
        fc.array(
          fc.array(
            fc.record({
              sameKey: fc.boolean(),
              cost: fc.constantFrom(1, 1, 2, 3),
              shadow: fc.constantFrom(false, false, true),
              refund: fc.constantFrom(false, false, false, true),
            }),
            { minLength: 1, maxLength: 40, size: 'max' },
          ),
          { minLength: 1, maxLength: 4 },
        ),
        async (algorithm, limit, turns) => {
          const tag = Math.random().toString(36).slice(2)
          const a = testRule(algorithm, limit, 1000)
          const b = testRule('fixed-window', limit + 1, 1000)
          const mem = new MemoryStore()
          let now = 10_000
          for (const turn of turns) {
            now += 250
            const requests = turn.map((r) => {
              const entries: ConsumeEntry[] = [
                { rule: a, key: `ip-${tag}`, cost: r.cost, maxWaitMs: 0, shadow: false },
                {
                  rule: b,
                  key: r.sameKey ? `ip-${tag}` : `user-${tag}`,
                  cost: 1,
                  maxWaitMs: 0,
                  shadow: r.shadow,
                },
              ]
              return { entries, refund: r.refund }
            })
            const want = requests.map((r) => {
              if (!r.refund) return answers(mem.consume(r.entries, now))
              mem.refund(r.entries, now)
              return undefined
            })
            const got = await Promise.all(
              requests.map(async (r) => {
                if (!r.refund) return answers(await store.consume(r.entries, now))
                await store.refund(r.entries, now)
                return undefined
              }),
            )
            expect(got).toEqual(want)
          }
        },
      ),
      { numRuns: Number(process.env.FG_RUNS ?? 30) },
    )
  })

  it('fails the requests of a batch whose client throws while sending, instead of crashing from the setImmediate', async () => {
    const throwing = await countedClient()
    const send = throwing.sendCommand.bind(throwing)
    let fail = true
    throwing.sendCommand = (...args: Parameters<Redis['sendCommand']>) => {
      if (fail) throw new Error('client broke')
      return send(...args)
    }
    const s = new RedisStore({
      client: throwing,
      prefix,
      timeSource: 'caller',
      callTimeoutMs: 1000,
    })
    const rule = testRule('token-bucket', 5, 1000)
    const e: ConsumeEntry[] = [{ rule, key: 'throws', cost: 1, maxWaitMs: 0, shadow: false }]
    const results = await Promise.allSettled([s.consume(e, 0), s.consume(e, 0)])
    expect(results.map((r) => r.status === 'rejected' && String(r.reason))).toEqual([
      'Error: client broke',
      'Error: client broke',
    ])
    fail = false
    expect((await s.consume(e, 0))[0]).toMatchObject({ allowed: true, remaining: 4 })
    throwing.disconnect()
  })

  // Started in the poll phase, the batch is due in the check phase that follows; started in
  // a check phase, it is due in the next one, after the timers. Both must drop it.
  for (const phase of ['poll', 'check'] as const) {
    it(`drops a batch unsent when a blocked event loop made it miss the deadline (${phase} phase): it fails and counts nothing`, async () => {
      // Long enough that the last call, a round trip on a starved machine, meets it.
      const deadlineMs = 1000
      const fast = new RedisStore({
        client,
        prefix,
        timeSource: 'caller',
        callTimeoutMs: deadlineMs,
      })
      const rule = testRule('fixed-window', 5, 60_000)
      const key = `blocked-${phase}`
      const e: ConsumeEntry[] = [{ rule, key, cost: 1, maxWaitMs: 0, shadow: false }]
      if (phase === 'check') await new Promise((r) => setImmediate(r))
      const before = client.sent
      // One request in flight, so the next ones wait for the end of the turn to leave.
      const first = fast.consume(
        [{ rule, key: `${key}-first`, cost: 1, maxWaitMs: 0, shadow: false }],
        0,
      )
      const pending = [fast.consume(e, 0), fast.consume(e, 0)]
      // A handler that hogs the CPU past the deadline before the batch could leave.
      const until = performance.now() + deadlineMs + 20
      while (performance.now() < until);
      const settled = await Promise.allSettled([first, ...pending])
      for (const r of settled)
        expect(r).toMatchObject({ status: 'rejected', reason: { code: 'FG_ERR_STORE_TIMEOUT' } })
      expect(client.sent - before).toBe(1)
      expect(await admin.exists(redisKey(prefix, key, rule.stateId))).toBe(0)
      // The store carries on: the next request is decided and counted once.
      expect((await fast.consume(e, 0))[0]).toMatchObject({ allowed: true, remaining: 4 })
    })
  }
})
