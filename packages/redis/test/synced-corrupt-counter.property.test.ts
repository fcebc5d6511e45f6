import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import type { CompiledRule, ConsumeEntry } from '@floodgate/core/algorithms'
import { testRule } from '@floodgate/core/testing'
import { createSyncedStore } from '@floodgate/redis'
import { MAX_TTL_MS } from '../src/key-ttl.js'
import { hashTag } from '../src/redis-key.js'
import { REDIS_URL, adminConnection, redisAvailable, uniquePrefix } from './helpers/redis.js'

const available = await redisAvailable()
const prefix = uniquePrefix('synced-corrupt')

const one = (rule: CompiledRule, key: string, cost: number): ConsumeEntry[] => [
  { rule, key, cost, maxWaitMs: 0, shadow: false },
]

/**
 * Fields of a fleet counter (the total, the schedule, the debt, the last sync, a host's sequence
 * and time).
 */
const field = fc.constantFrom('t', 'f', 'x', 'w', 's:other-host', 'p:other-host')
/** What someone else may have left in one: no number, a non-finite one, or a plausible one. */
const value = fc.oneof(
  fc.constantFrom(
    'abc',
    '',
    'inf',
    '-inf',
    'nan',
    '1e999',
    '0x10',
    ' 1',
    '1,5',
    `${'0'.repeat(6000)}1`,
  ),
  fc.constantFrom('0', '1', '-1', '2.5', '5000000'),
  // Finite, but past anything a sync writes: the schedule or the debt they make must stay finite.
  fc.constantFrom('1e308', '-1e308', '1.7976931348623157e308', '4.7e18', '-4.7e18', '1e20'),
  fc.double({ min: -1e6, max: 1e6, noNaN: true }).map(String),
)

describe.skipIf(!available)(
  'SyncedStore on a fleet counter whose fields Floodgate did not write',
  () => {
    const redis = adminConnection(prefix)

    let run = 0
    it('syncs every key of the call, fails no sync, and leaves the counter with a TTL (property)', async () => {
      const rule = testRule('token-bucket', 10, 60_000)
      const now = 5_000_000
      await fc.assert(
        fc.asyncProperty(
          fc.dictionary(field, value, { minKeys: 1 }),
          fc.integer({ min: 0, max: 2 }),
          async (fields, poisoned) => {
            run++
            // A host of its own per run: units a failed sync left unsent stay out of the next run.
            const store = createSyncedStore({
              url: REDIS_URL,
              prefix,
              syncMs: 600_000,
              clock: () => now,
            })
            await store.ready
            try {
              const keys = [0, 1, 2].map((i) => `k${run}-${i}`)
              const counter = (key: string): string =>
                `${prefix}:{${hashTag(key)}}:${rule.stateId}:synced`
              for (const key of keys) store.consume(one(rule, key, 2), now)
              await redis.admin.hset(counter(keys[poisoned]!), fields)
              await store.syncNow() // reads the fleet levels
              await store.syncNow() // sends the units
              expect(store.failedSyncs).toBe(0)
              for (const [i, key] of keys.entries()) {
                // The other keys of the call hold exactly what was sent; the poisoned one at least
                // a finite total (a plausible one may have been taken as the fleet's).
                const total = Number(await redis.admin.hget(counter(key), 't'))
                if (i === poisoned) expect(Number.isFinite(total), `total ${total}`).toBe(true)
                else expect(total).toBe(2)
                const ttl = await redis.admin.pttl(counter(key))
                expect(ttl).toBeGreaterThan(0)
                expect(ttl).toBeLessThanOrEqual(MAX_TTL_MS)
                // The host's own view stays a bucket: no NaN, nothing below empty or past full.
                const seen = store.peek([{ rule, key }], now)[0]!
                expect(seen.remaining).toBeGreaterThanOrEqual(0)
                expect(seen.remaining).toBeLessThanOrEqual(10)
                expect(Number.isFinite(seen.retryAfterMs)).toBe(true)
              }
            } finally {
              await store.close()
            }
          },
        ),
        { numRuns: 60 },
      )
    })
  },
)
