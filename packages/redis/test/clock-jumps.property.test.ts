import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { MemoryStore } from '@floodgate/core'
import {
  STATE_TIME_HORIZON_MS,
  algorithms,
  type AlgorithmName,
  type ConsumeEntry,
} from '@floodgate/core/algorithms'
import { testRule } from '@floodgate/core/testing'
import { callerClockStore } from './helpers/caller-clock-store.js'
import { redisAvailable, uniquePrefix } from './helpers/redis.js'
import { answers } from './helpers/results.js'

const available = await redisAvailable()
const prefix = uniquePrefix('clock-jumps')

// Concurrency is left out: its Redis state is leases that expire, which MemoryStore has not.
const ALGORITHMS = (Object.keys(algorithms) as AlgorithmName[]).filter((a) => a !== 'concurrency')

const DAY_MS = 86_400_000

/**
 * The clock a store is handed: mostly forward, sometimes back a little (two hosts' clocks) or a
 * day (Redis restarted on a host whose clock is behind, with `timeSource: 'redis'`).
 */
const step = fc.oneof(
  { weight: 6, arbitrary: fc.integer({ min: 0, max: 700 }) },
  { weight: 2, arbitrary: fc.integer({ min: -5000, max: 0 }) },
  { weight: 1, arbitrary: fc.constantFrom(-DAY_MS, -3_600_000) },
)

describe.skipIf(!available)('RedisStore under a clock that goes back', () => {
  const redis = callerClockStore(prefix)

  // Found by redis-store.test.ts's property: a request that takes nothing, while the log's
  // newest entry lies past the horizon, left the log empty in MemoryStore but kept it in Redis,
  // so the two answered apart once the clock came back within the horizon of that entry.
  it('sliding-window-log: a request of cost 0 forgets a log dated past the horizon in both stores', async () => {
    const rule = testRule('sliding-window-log', 1, 7)
    const mem = new MemoryStore()
    const entry = (cost: number): ConsumeEntry[] => [
      { rule, key: 'swl-cost-0', cost, maxWaitMs: 0, shadow: false },
    ]
    const t0 = 1_763_000_000_000
    for (const [cost, at] of [
      [1, t0],
      [0, t0 - STATE_TIME_HORIZON_MS - 1],
      [1, t0 - STATE_TIME_HORIZON_MS],
    ] as const) {
      expect(
        answers(await redis.store.consume(entry(cost), at)),
        `cost ${cost} at ${at - t0}`,
      ).toEqual(answers(mem.consume(entry(cost), at)))
    }
  })

  let run = 0
  for (const algorithm of ALGORITHMS) {
    it(`${algorithm}: answers as MemoryStore at every step, and the client is admitted again once the clock is past the latest time seen plus the rule's refill, or at once after a step back past the horizon (property)`, async () => {
      await fc.assert(
        fc.asyncProperty(
          fc.integer({ min: 1, max: 6 }),
          fc.constantFrom(100, 1000, 60_000),
          fc.array(fc.record({ dt: step, cost: fc.constantFrom(1, 1, 2, 0.5, 0) }), {
            minLength: 1,
            maxLength: 20,
          }),
          fc.oneof(fc.integer({ min: 0, max: 5000 }), fc.constantFrom(DAY_MS, 365 * DAY_MS)),
          async (limit, windowMs, steps, backMs) => {
            const rule = testRule(algorithm, limit, windowMs)
            const mem = new MemoryStore()
            const key = `k${++run}`
            const entry = (cost: number): ConsumeEntry[] => [
              { rule, key, cost, maxWaitMs: 0, shadow: false },
            ]
            let now = 1_763_000_000_000
            let latest = now
            let earliest = now
            for (const [i, s] of steps.entries()) {
              now += s.dt
              latest = Math.max(latest, now)
              earliest = Math.min(earliest, now)
              const got = answers(await redis.store.consume(entry(s.cost), now))
              expect(got, `step ${i} at ${now - 1_763_000_000_000}`).toEqual(
                answers(mem.consume(entry(s.cost), now)),
              )
            }
            // A jump back holds no client out for longer than the latest time a request was
            // counted at, plus the time the rule takes to refill from empty (two windows).
            const after = latest + 2 * windowMs + 1
            expect(await redis.store.consume(entry(1), after)).toMatchObject([{ allowed: true }])
            // A jump back to more than the horizon before every time the state can hold (a
            // window's start lies up to a window before its request) forgets the state: the
            // client is decided as a new one at once, where it used to wait for the clock to
            // catch up with the state's time.
            const back = earliest - windowMs - STATE_TIME_HORIZON_MS - 1 - backMs
            expect(answers(await redis.store.consume(entry(1), back))).toEqual(
              answers(new MemoryStore().consume(entry(1), back)),
            )
          },
        ),
        { numRuns: 40 },
      )
    })
  }
})
