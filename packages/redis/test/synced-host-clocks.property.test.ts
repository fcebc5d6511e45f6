import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import type { ConsumeEntry } from '@floodgate/core/algorithms'
import { testRule } from '@floodgate/core/testing'
import { createSyncedStore, type SyncedStore } from '@floodgate/redis'
import { hashTag } from '../src/redis-key.js'
import { recordingLogger } from './helpers/recording-logger.js'
import { REDIS_URL, adminConnection, redisAvailable, uniquePrefix } from './helpers/redis.js'

// Hosts whose clocks disagree and step (NTP, a VM resumed): each host's decisions use its own
// clock, Redis refills by its own. Against one shared bucket per key: the fleet counter holds
// every admitted unit exactly once, no round fails, a host's view stays a bucket (no NaN,
// nothing below empty or past full), and a key a host stopped serving is forgotten once its
// clock has run past the time a key is remembered.

const available = await redisAvailable()
const prefix = uniquePrefix('synced-host-clocks')
const HOSTS = 3
const KEYS = 2
const HOUR = 3_600_000

type Step =
  | { kind: 'consume'; host: number; key: number; cost: number }
  | { kind: 'sync'; host: number }
  | { kind: 'step'; host: number; ms: number }

const host = fc.integer({ min: 0, max: HOSTS - 1 })
const step: fc.Arbitrary<Step> = fc.oneof(
  {
    weight: 5,
    arbitrary: fc.record({
      kind: fc.constant('consume' as const),
      host,
      key: fc.integer({ min: 0, max: KEYS - 1 }),
      cost: fc.integer({ min: 1, max: 4 }),
    }),
  },
  { weight: 4, arbitrary: fc.record({ kind: fc.constant('sync' as const), host }) },
  {
    weight: 2,
    arbitrary: fc.record({
      kind: fc.constant('step' as const),
      host,
      ms: fc.constantFrom(-24 * HOUR, -HOUR, -5000, -50, 50, 700, 5000, HOUR, 24 * HOUR),
    }),
  },
)

describe.skipIf(!available)('SyncedStore: hosts whose clocks disagree and step (property)', () => {
  const redis = adminConnection(prefix)
  const rule = testRule('token-bucket', 10, 1000)
  let run = 0

  it('counts every admitted unit once, fails no round, keeps every view a bucket', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.integer({ min: -HOUR, max: HOUR }), { minLength: HOSTS, maxLength: HOSTS }),
        fc.array(step, { minLength: 1, maxLength: 40 }),
        async (skews, steps) => {
          run++
          const clocks = skews.map((s) => 1_700_000_000_000 + s)
          const logger = recordingLogger()
          const stores: SyncedStore[] = clocks.map((_, i) =>
            createSyncedStore({
              url: REDIS_URL,
              prefix,
              syncMs: 600_000,
              clock: () => clocks[i]!,
              logger,
            }),
          )
          await Promise.all(stores.map((s) => s.ready))
          const name = (k: number): string => `r${run}-k${k}`
          const admitted = Array.from({ length: KEYS }, () => 0)
          try {
            for (const s of steps) {
              const store = stores[s.host]!
              if (s.kind === 'step') clocks[s.host]! += s.ms
              else if (s.kind === 'sync') await store.syncNow()
              else {
                const e: ConsumeEntry = {
                  rule,
                  key: name(s.key),
                  cost: s.cost,
                  maxWaitMs: 0,
                  shadow: false,
                }
                if (store.consume([e], clocks[s.host]!)[0]!.allowed) admitted[s.key]! += s.cost
              }
              for (const [i, st] of stores.entries()) {
                for (let k = 0; k < KEYS; k++) {
                  const seen = st.peek([{ rule, key: name(k) }], clocks[i]!)[0]!
                  expect(seen.remaining).toBeGreaterThanOrEqual(0)
                  expect(seen.remaining).toBeLessThanOrEqual(10)
                  expect(Number.isFinite(seen.retryAfterMs)).toBe(true)
                }
              }
            }
            // Every host's clock runs on past the time a key is remembered: each forgets them.
            for (const [i, st] of stores.entries()) {
              await st.syncNow()
              await st.syncNow()
              clocks[i] = Math.max(...clocks) + 24 * HOUR
              await st.syncNow()
              expect(st.trackedKeys).toBe(0)
            }
            await Promise.all(stores.map((s) => s.close()))
            for (let k = 0; k < KEYS; k++) {
              const key = `${prefix}:{${hashTag(name(k))}}:${rule.stateId}:synced`
              expect(Number((await redis.admin.hget(key, 't')) ?? 0)).toBe(admitted[k])
            }
            expect(stores.map((s) => s.failedSyncs)).toEqual([0, 0, 0])
            expect(logger.lines.join('\n')).toBe('')
          } finally {
            await Promise.all(stores.map((s) => s.close()))
          }
        },
      ),
      { numRuns: 60 },
    )
  }, 120_000)
})
