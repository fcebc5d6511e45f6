import fc from 'fast-check'
import { Redis } from 'ioredis'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { ConsumeEntry } from '@floodgate/core/algorithms'
import { testRule } from '@floodgate/core/testing'
import { createSyncedStore } from '@floodgate/redis'
import { hashTag } from '../src/redis-key.js'
import { FaultProxy, type FaultMode } from './helpers/fault-proxy.js'
import { REDIS_URL, deletePrefix, redisAvailable, uniquePrefix } from './helpers/redis.js'

// While Redis confirms nothing, every shared key keeps units to send and cannot be dropped: a
// flood of new client keys during an outage grew the table of shared keys without bound. Past
// twice `maxKeys` a new key is now refused (as MemoryStore refuses one when full), and no unit
// admitted is lost.

const available = await redisAvailable()
const prefix = uniquePrefix('synced-outage-flood')
const rule = testRule('token-bucket', 10, 1000)
const one = (key: string, shadow = false): ConsumeEntry[] => [
  { rule, key, cost: 1, maxWaitMs: 0, shadow },
]
const quiet = { warn: () => {}, error: () => {}, info: () => {}, debug: () => {} }

describe.skipIf(!available)(
  'SyncedStore under a flood of new client keys while Redis is away',
  () => {
    let admin: Redis
    beforeAll(() => {
      admin = new Redis(REDIS_URL)
    })
    afterAll(async () => {
      await deletePrefix(admin, prefix)
      admin.disconnect()
    })

    it('holds at most twice maxKeys shared keys, refuses newcomers past that, keeps deciding known ones', async () => {
      let now = 1_000_000
      const store = createSyncedStore({
        url: 'redis://127.0.0.1:1', // nothing listens: every round fails
        prefix,
        maxKeys: 10,
        syncMs: 600_000,
        syncTimeoutMs: 50,
        clock: () => now,
        logger: quiet,
      })
      try {
        expect(store.consume(one('known'), now)[0]!.allowed).toBe(true)
        for (let i = 0; i < 500; i++) {
          now += 200 // each client's local state is fresh again before the next: MemoryStore has room
          store.consume(one(`ip${i}`), now)
          if (i % 50 === 0) await store.syncNow()
        }
        expect(store.trackedKeys).toBeLessThanOrEqual(20)
        const newcomer = store.consume(one('newcomer'), now)[0]!
        expect(newcomer.allowed).toBe(false)
        expect(newcomer.storeFull).toBe(true)
        expect(newcomer.retryAfterMs).toBe(1000)
        // A shadow rule's new key is decided, never refused for want of room.
        expect(store.consume(one('shadow-newcomer', true), now)[0]!.allowed).toBe(true)
        expect(store.consume(one('known'), now)[0]!.allowed).toBe(true)
        expect(store.trackedKeys).toBeLessThanOrEqual(20)
      } finally {
        await store.close()
      }
    })

    it('every unit admitted reaches Redis once, and the table stays within twice maxKeys (property)', async () => {
      const url = new URL(REDIS_URL)
      const proxy = await FaultProxy.start(url.hostname, Number(url.port || 6379))
      let run = 0
      try {
        await fc.assert(
          fc.asyncProperty(
            fc.array(
              fc.oneof(
                {
                  weight: 8,
                  arbitrary: fc.record({
                    kind: fc.constant('consume' as const),
                    // Unbiased: many distinct client keys, as in a flood.
                    key: fc.noBias(fc.nat(200)),
                    // Past a refill: the local state is fresh again, so MemoryStore has room.
                    advance: fc.constantFrom(0, 150, 400),
                  }),
                },
                { weight: 2, arbitrary: fc.record({ kind: fc.constant('sync' as const) }) },
                {
                  weight: 2,
                  arbitrary: fc.record({
                    kind: fc.constant('tick' as const),
                    ms: fc.constantFrom(0, 50, 150, 1200),
                  }),
                },
                {
                  weight: 1,
                  arbitrary: fc.record({
                    kind: fc.constant('fault' as const),
                    mode: fc.constantFrom<FaultMode>('pass', 'stall', 'stall', 'drop-replies'),
                  }),
                },
              ),
              { minLength: 20, maxLength: 200, size: 'max' },
            ),
            fc.constantFrom<FaultMode>('pass', 'stall', 'drop-replies'),
            async (steps, start) => {
              run++
              proxy.setMode('pass')
              let now = 1_000_000
              const maxKeys = 4
              const store = createSyncedStore({
                url: `redis://127.0.0.1:${proxy.port}`,
                prefix: `${prefix}:${run}`,
                maxKeys,
                syncMs: 600_000,
                syncTimeoutMs: 40,
                clock: () => now,
                logger: {
                  ...quiet,
                  warn: (o: { unsent?: number; unconfirmed?: number }) => {
                    unsent += o.unsent ?? 0
                    unconfirmed += o.unconfirmed ?? 0
                  },
                },
              })
              let unsent = 0
              let unconfirmed = 0
              const admitted = new Map<string, number>()
              try {
                await store.ready
                proxy.setMode(start)
                for (const s of steps) {
                  if (s.kind === 'consume') {
                    now += s.advance
                    const key = `c${s.key}`
                    if (store.consume(one(key), now)[0]!.allowed) {
                      admitted.set(key, (admitted.get(key) ?? 0) + 1)
                    }
                  } else if (s.kind === 'sync') await store.syncNow()
                  else if (s.kind === 'tick') now += s.ms
                  else proxy.setMode(s.mode)
                  expect(store.trackedKeys).toBeLessThanOrEqual(2 * maxKeys)
                }
                proxy.setMode('pass')
              } finally {
                await store.close()
              }
              // close() gives up on a link that stays silent: what it could not send is logged.
              let inRedis = 0
              let total = 0
              for (const [key, units] of admitted) {
                const counter = `${prefix}:${run}:{${hashTag(key)}}:${rule.stateId}:synced`
                const t = Number((await admin.hget(counter, 't')) ?? '0')
                expect(t, key).toBeLessThanOrEqual(units) // never counted twice
                inRedis += t
                total += units
              }
              expect(inRedis).toBeLessThanOrEqual(total - unsent)
              expect(inRedis).toBeGreaterThanOrEqual(total - unsent - unconfirmed)
            },
          ),
          { numRuns: 40 },
        )
      } finally {
        await proxy.close()
      }
    })
  },
)
