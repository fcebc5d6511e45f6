import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import type { ConsumeEntry } from '@floodgate/core/algorithms'
import { testRule } from '@floodgate/core/testing'
import { createSyncedStore } from '@floodgate/redis'
import { hashTag } from '../src/redis-key.js'
import { FaultProxy } from './helpers/fault-proxy.js'
import { recordingLogger } from './helpers/recording-logger.js'
import { REDIS_URL, adminConnection, redisAvailable, uniquePrefix } from './helpers/redis.js'

// A round waits for the reads of new keys in flight, then refused to send anything while any
// call was in flight, taking it for its own last round unanswered (a stalled link). A read of a
// key first seen while it waited is such a call: with new client keys arriving all the time
// (a busy server), rounds failed and logged "Redis has not answered" on a healthy link, and the
// units of every key waited for a later round, so the fleet learned them late.

const available = await redisAvailable()
const prefix = uniquePrefix('synced-reads-round')

const tick = (): Promise<void> => new Promise((r) => setImmediate(r))
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms))

describe.skipIf(!available)('SyncedStore: reads of new keys during a round', () => {
  const redis = adminConnection(prefix)
  const rule = testRule('token-bucket', 1000, 60_000)
  const one = (key: string, cost: number): ConsumeEntry[] => [
    { rule, key, cost, maxWaitMs: 0, shadow: false },
  ]
  const counter = (key: string): string => `${prefix}:{${hashTag(key)}}:${rule.stateId}:synced`
  let run = 0

  it('a key first seen while a round waits for reads: the round still sends, nothing fails', async () => {
    // A link with some latency, so the second read is surely in flight when the first lands.
    const url = new URL(REDIS_URL)
    const proxy = await FaultProxy.start(url.hostname, Number(url.port || 6379))
    const now = 1_000_000
    const logger = recordingLogger()
    const store = createSyncedStore({
      url: `redis://127.0.0.1:${proxy.port}`,
      prefix,
      syncMs: 600_000,
      clock: () => now,
      logger,
    })
    await store.ready
    const old = `old${++run}`
    try {
      store.consume(one(old, 1), now)
      await store.syncNow()
      proxy.setDelay(20)
      store.consume(one(old, 2), now)
      store.consume(one(`a${run}`, 1), now)
      await tick() // a's read is in flight
      const round = store.syncNow() // waits for it
      await sleep(10)
      store.consume(one(`b${run}`, 1), now)
      await tick() // b's read leaves while the round waits, and lands after a's
      await round
      expect(store.failedSyncs).toBe(0)
      expect(await redis.admin.hget(counter(old), 't')).toBe('3')
      expect(logger.lines.join('\n')).toBe('')
    } finally {
      await store.close()
      await proxy.close()
    }
  })

  it('new keys arriving at random between rounds: no round fails on a healthy link (property)', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(
          fc.record({
            newKeys: fc.integer({ min: 0, max: 3 }),
            ticks: fc.integer({ min: 0, max: 2 }),
          }),
          { minLength: 1, maxLength: 20 },
        ),
        async (rounds) => {
          const now = 1_000_000
          const logger = recordingLogger()
          const store = createSyncedStore({
            url: REDIS_URL,
            prefix,
            syncMs: 600_000,
            clock: () => now,
            logger,
          })
          await store.ready
          const old = `p${++run}`
          let admitted = 0
          try {
            let n = 0
            for (const r of rounds) {
              store.consume(one(old, 1), now)
              admitted++
              const round = store.syncNow()
              for (let i = 0; i < r.newKeys; i++) {
                store.consume(one(`p${run}-${n++}`, 1), now)
                for (let j = 0; j < r.ticks; j++) await tick()
              }
              await round
            }
            await store.close()
            expect(store.failedSyncs).toBe(0)
            expect(logger.lines.join('\n')).toBe('')
            expect(Number(await redis.admin.hget(counter(old), 't'))).toBe(admitted)
          } finally {
            await store.close()
          }
        },
      ),
      { numRuns: 40 },
    )
  }, 60_000)
})
