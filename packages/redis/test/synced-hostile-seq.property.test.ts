import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import type { CompiledRule, ConsumeEntry } from '@floodgate/core/algorithms'
import { testRule } from '@floodgate/core/testing'
import { createSyncedStore, type SyncedStore } from '@floodgate/redis'
import { hashTag } from '../src/redis-key.js'
import { recordingLogger } from './helpers/recording-logger.js'
import { REDIS_URL, adminConnection, redisAvailable, uniquePrefix } from './helpers/redis.js'

// A host's own "last batch" field (`s:<host>`) in a fleet counter holds a value Floodgate never
// wrote there (an operator's mistake, a backup restored from elsewhere): Redis took any number
// above the host's next seq as "applied already" and skipped every batch of that host on that
// key, for good; a value that was no number threw the whole counter away (every host's units).
// Such a value must read as absent: the host's units still reach the fleet, once each.

const available = await redisAvailable()
const prefix = uniquePrefix('synced-hostile-seq')

const one = (rule: CompiledRule, key: string, cost: number): ConsumeEntry[] => [
  { rule, key, cost, maxWaitMs: 0, shadow: false },
]

/** Values no SyncedStore writes in its own `s:` field: past its seqs, negative, no integer. */
const HOSTILE = [
  '1e18',
  '4.7e18',
  '9007199254740993',
  '1000000',
  '99',
  '-1',
  '-1e18',
  '2.5',
  'abc',
  '',
  ' 1',
  '0x10',
  'nan',
  'inf',
  '-inf',
  '1e999',
  `${'0'.repeat(6000)}1`,
]

describe.skipIf(!available)("SyncedStore on a host's own seq field it never wrote", () => {
  const redis = adminConnection(prefix)
  const rule = testRule('token-bucket', 1000, 60_000)
  const now = 5_000_000
  let run = 0
  const counter = (key: string): string => `${prefix}:{${hashTag(key)}}:${rule.stateId}:synced`

  const host = (): SyncedStore =>
    createSyncedStore({ url: REDIS_URL, prefix, syncMs: 600_000, clock: () => now })

  /** The `s:` fields of a counter (one per host that pushed to it). */
  async function seqFields(key: string): Promise<string[]> {
    const all = await redis.admin.hgetall(counter(key))
    return Object.keys(all).filter((f) => f.startsWith('s:'))
  }

  it.each(HOSTILE)('%j: the next batches still count, once each', async (hostile) => {
    const key = `k${++run}`
    const store = host()
    await store.ready
    try {
      store.consume(one(rule, key, 2), now)
      await store.syncNow() // reads the fleet level
      await store.syncNow() // sends the 2 units
      // A second host on the key: its units must survive the poisoned field.
      const other = host()
      await other.ready
      try {
        other.consume(one(rule, key, 4), now)
        await other.syncNow()
        await other.syncNow()
      } finally {
        await other.close()
      }
      expect(await redis.admin.hget(counter(key), 't')).toBe('6')
      const mine = (await seqFields(key))[0]!
      await redis.admin.hset(counter(key), mine, hostile)
      store.consume(one(rule, key, 3), now)
      await store.syncNow()
      expect(await redis.admin.hget(counter(key), 't')).toBe('9')
      // The field is the host's again: a later batch counts once, and so does a resend of it.
      store.consume(one(rule, key, 1), now)
      await store.syncNow()
      await store.syncNow()
      expect(await redis.admin.hget(counter(key), 't')).toBe('10')
      expect(store.failedSyncs).toBe(0)
    } finally {
      await store.close()
    }
  })

  it('a counter replaced by a key of another type takes the next batches', async () => {
    const key = `k${++run}`
    const store = host()
    await store.ready
    try {
      store.consume(one(rule, key, 2), now)
      await store.syncNow()
      await store.syncNow()
      await redis.admin.del(counter(key))
      await redis.admin.set(counter(key), 'not a hash')
      store.consume(one(rule, key, 3), now)
      await store.syncNow()
      store.consume(one(rule, key, 1), now)
      await store.syncNow()
      expect(await redis.admin.hget(counter(key), 't')).toBe('4')
      expect(store.failedSyncs).toBe(0)
    } finally {
      await store.close()
    }
  })

  type Step =
    | { kind: 'consume'; host: number; cost: number }
    | { kind: 'sync'; host: number }
    | { kind: 'poison'; host: number; value: string }

  const HOSTS = 3
  const hostIndex = fc.integer({ min: 0, max: HOSTS - 1 })
  const step: fc.Arbitrary<Step> = fc.oneof(
    {
      weight: 4,
      arbitrary: fc.record({
        kind: fc.constant('consume' as const),
        host: hostIndex,
        cost: fc.integer({ min: 1, max: 5 }),
      }),
    },
    { weight: 3, arbitrary: fc.record({ kind: fc.constant('sync' as const), host: hostIndex }) },
    {
      weight: 2,
      arbitrary: fc.record({
        kind: fc.constant('poison' as const),
        host: hostIndex,
        value: fc.oneof(
          fc.constantFrom(...HOSTILE),
          // Any integer past the seqs a host of this run can have reached.
          fc.integer({ min: 1000, max: Number.MAX_SAFE_INTEGER }).map(String),
          fc.integer({ min: Number.MIN_SAFE_INTEGER, max: -1 }).map(String),
          fc.double({ noNaN: false }).map(String),
          fc.string(),
        ),
      }),
    },
  )

  it('fleet total = units admitted, whatever lands in the hosts own seq fields (property)', async () => {
    // The model: one shared bucket, every admitted unit counted in Redis exactly once.
    await fc.assert(
      fc.asyncProperty(fc.array(step, { minLength: 1, maxLength: 40 }), async (steps) => {
        const key = `p${++run}`
        const logger = recordingLogger()
        const stores = Array.from({ length: HOSTS }, () =>
          createSyncedStore({ url: REDIS_URL, prefix, syncMs: 600_000, clock: () => now, logger }),
        )
        await Promise.all(stores.map((s) => s.ready))
        let admitted = 0
        try {
          for (const s of steps) {
            const store = stores[s.host]!
            if (s.kind === 'consume') {
              if (store.consume(one(rule, key, s.cost), now)[0]!.allowed) admitted += s.cost
            } else if (s.kind === 'sync') {
              await store.syncNow()
            } else {
              // The field of the host that pushed n-th to the counter, if any did.
              const fields = await seqFields(key)
              const f = fields[s.host % Math.max(1, fields.length)]
              if (f !== undefined) await redis.admin.hset(counter(key), f, s.value)
            }
          }
          await Promise.all(stores.map((s) => s.close()))
          const total = Number((await redis.admin.hget(counter(key), 't')) ?? 0)
          expect(total).toBe(admitted)
          expect(stores.map((s) => s.failedSyncs)).toEqual([0, 0, 0])
          expect(logger.lines.join('\n')).toBe('')
        } finally {
          await Promise.all(stores.map((s) => s.close()))
        }
      }),
      { numRuns: 60 },
    )
  }, 120_000)
})
