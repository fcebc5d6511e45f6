import { Redis } from 'ioredis'
import { describe, expect, it } from 'vitest'
import type { ConsumeEntry } from '@floodgate/core/algorithms'
import { testRule } from '@floodgate/core/testing'
import { createSyncedStore } from '@floodgate/redis'
import { hashTag } from '../src/redis-key.js'
import { recordingLogger } from './helpers/recording-logger.js'
import { RedisServer, redisBinariesAvailable } from './helpers/redis-server.js'

// A Redis under maxmemory with an allkeys policy evicts fleet counters while hosts sync them:
// a counter evicted starts over from what hosts send next (its history is gone, as documented),
// no sync fails for it, and no counter ever holds more than the hosts admitted for its key.

const binaries = redisBinariesAvailable()
if (!binaries && process.env.CI === 'true') throw new Error('redis-server is required under CI')

const HOSTS = 4
const KEYS = 400
const rule = testRule('token-bucket', 1_000_000, 60_000)

describe.skipIf(!binaries)('SyncedStore on a Redis that evicts its counters', () => {
  it.each(['allkeys-lru', 'allkeys-random'])(
    'under maxmemory with %s: no sync fails, no counter holds more than was admitted',
    async (policy) => {
      const server = await RedisServer.start(['--maxmemory', '2mb', '--maxmemory-policy', policy])
      const admin = new Redis(server.port, '127.0.0.1')
      const logger = recordingLogger()
      const now = 1_000_000
      const stores = Array.from({ length: HOSTS }, () =>
        createSyncedStore({
          url: server.url,
          prefix: 'fgevict',
          syncMs: 600_000,
          logger,
          clock: () => now,
        }),
      )
      const admitted = new Map<string, number>()
      try {
        await Promise.all(stores.map((s) => s.ready))
        // Filler that takes most of the memory, so the counters are evicted as they grow.
        const filler = 'x'.repeat(1000)
        for (let round = 0; round < 6; round++) {
          for (const [h, store] of stores.entries()) {
            for (let k = 0; k < KEYS; k++) {
              const key = `c${(k * (h + 1) + round) % KEYS}`
              const e: ConsumeEntry = { rule, key, cost: 1, maxWaitMs: 0, shadow: false }
              if (store.consume([e], now)[0]!.allowed)
                admitted.set(key, (admitted.get(key) ?? 0) + 1)
            }
          }
          const pipe = admin.pipeline()
          for (let i = 0; i < 800; i++) pipe.set(`filler:${round}:${i}`, filler)
          await pipe.exec()
          await Promise.all(stores.map((s) => s.syncNow()))
          await Promise.all(stores.map((s) => s.syncNow()))
        }
        const info = await admin.info('stats')
        const evicted = Number(/evicted_keys:(\d+)/.exec(info)?.[1] ?? 0)
        expect(evicted).toBeGreaterThan(0)
        expect(stores.map((s) => s.failedSyncs)).toEqual(stores.map(() => 0))
        for (const [key, units] of admitted) {
          const t = await admin.hget(`fgevict:{${hashTag(key)}}:${rule.stateId}:synced`, 't')
          expect(Number(t ?? 0)).toBeLessThanOrEqual(units)
        }
        expect(logger.lines.join('\n')).toBe('')
      } finally {
        await Promise.all(stores.map((s) => s.close()))
        admin.disconnect()
        await server.stop()
      }
    },
    60_000,
  )
})
