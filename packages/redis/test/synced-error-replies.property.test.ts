import fc from 'fast-check'
import { Redis } from 'ioredis'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { ConsumeEntry } from '@floodgate/core/algorithms'
import { testRule } from '@floodgate/core/testing'
import { createSyncedStore } from '@floodgate/redis'
import { hashTag } from '../src/redis-key.js'
import { RedisServer, freePort, redisBinariesAvailable } from './helpers/redis-server.js'

const binaries = redisBinariesAvailable()
if (!binaries && process.env.CI === 'true') throw new Error('redis-server is required under CI')

/** Faults a real Redis answers a sync with, each made and undone on the test's own server. */
type Fault = 'none' | 'NOPERM' | 'OOM' | 'READONLY'

const rule = testRule('token-bucket', 1_000_000, 60_000)
const KEYS = ['a', 'b', 'c']

describe.skipIf(!binaries)('SyncedStore under error replies (property, real redis-server)', () => {
  let server: RedisServer
  let admin: Redis
  let nowhere: number

  beforeAll(async () => {
    server = await RedisServer.start()
    admin = new Redis(server.port, '127.0.0.1', { maxRetriesPerRequest: 0 })
    await admin.call('ACL', 'SETUSER', 'fg', 'on', '>pw', '~*', '+@all')
    nowhere = await freePort()
  })
  afterAll(async () => {
    admin.disconnect()
    await server.stop()
  })

  async function set(fault: Fault): Promise<void> {
    await admin.call('ACL', 'SETUSER', 'fg', fault === 'NOPERM' ? '-@all' : '+@all')
    await admin.config('SET', 'maxmemory', fault === 'OOM' ? '1' : '0')
    if (fault === 'READONLY') await admin.replicaof('127.0.0.1', String(nowhere))
    else await admin.replicaof('NO', 'ONE')
  }

  it('decides locally through every fault, and once Redis is healthy the fleet holds each admitted unit exactly once', async () => {
    let run = 0
    await fc.assert(
      fc.asyncProperty(
        fc.array(
          fc.record({
            fault: fc.constantFrom<Fault>('none', 'NOPERM', 'OOM', 'READONLY'),
            costs: fc.array(fc.tuple(fc.constantFrom(...KEYS), fc.integer({ min: 1, max: 3 })), {
              maxLength: 4,
            }),
          }),
          { minLength: 1, maxLength: 5 },
        ),
        async (steps) => {
          const prefix = `fgsyncerr${run++}`
          let now = 1_000_000
          const store = createSyncedStore({
            url: `redis://fg:pw@127.0.0.1:${server.port}`,
            prefix,
            syncMs: 600_000,
            syncTimeoutMs: 2000,
            clock: () => now,
            logger: { warn: () => {}, error: () => {}, info: () => {}, debug: () => {} },
          })
          const admitted = new Map<string, number>()
          let tracked = false
          let faulted = false
          try {
            await store.ready
            for (const s of steps) {
              await set(s.fault)
              for (const [key, cost] of s.costs) {
                const entry: ConsumeEntry = { rule, key, cost, maxWaitMs: 0, shadow: false }
                const [r] = store.consume([entry], now)
                // Decided here, synchronously, whatever Redis answers.
                expect(r!.allowed).toBe(true)
                admitted.set(key, (admitted.get(key) ?? 0) + cost)
                now += 10
              }
              if (s.costs.length > 0) tracked = true
              // A faulty Redis fails a round with keys to sync; under OOM only one that writes
              // units (a round that only reads levels writes nothing Redis refuses).
              if (tracked && (s.fault === 'NOPERM' || s.fault === 'READONLY')) faulted = true
              if (s.fault === 'OOM' && s.costs.length > 0) faulted = true
              await store.syncNow()
              await store.syncNow()
            }
            if (faulted) expect(store.failedSyncs).toBeGreaterThan(0)
            await set('none')
            // Healthy again: rounds catch up (the client may be reopening after READONLY).
            for (let i = 0; i < 100; i++) {
              await store.syncNow()
              let all = true
              for (const [key, units] of admitted) {
                const t = await admin.hget(
                  `${prefix}:{${hashTag(key)}}:${rule.stateId}:synced`,
                  't',
                )
                if (Number(t) !== units) all = false
              }
              if (all) break
              await new Promise((r) => setTimeout(r, 50))
            }
            for (const [key, units] of admitted) {
              const t = await admin.hget(`${prefix}:{${hashTag(key)}}:${rule.stateId}:synced`, 't')
              expect({ key, total: Number(t) }).toEqual({ key, total: units })
            }
          } finally {
            await set('none')
            await store.close()
          }
        },
      ),
      { numRuns: 10 },
    )
  }, 240_000)
})
