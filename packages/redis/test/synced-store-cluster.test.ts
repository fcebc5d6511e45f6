import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest'
import type { CompiledRule, ConsumeEntry } from '@floodgate/core/algorithms'
import { testRule } from '@floodgate/core/testing'
import { createSyncedStore, type SyncedStore } from '@floodgate/redis'
import { RedisClusterFixture } from './helpers/redis-cluster.js'
import { redisBinariesAvailable } from './helpers/redis-server.js'

const binaries = redisBinariesAvailable()
if (!binaries && process.env.CI === 'true') throw new Error('redis-server is required under CI')

const one = (rule: CompiledRule, key: string, cost = 1): ConsumeEntry[] => [
  { rule, key, cost, maxWaitMs: 0, shadow: false },
]

describe.skipIf(!binaries)('SyncedStore on Redis Cluster (3 primaries)', () => {
  let cluster: RedisClusterFixture
  const now = 1_000_000

  beforeAll(async () => {
    cluster = await RedisClusterFixture.start({ primaries: 3, replicas: 0 }).catch(() =>
      RedisClusterFixture.start({ primaries: 3, replicas: 0 }),
    )
  }, 60_000)
  afterAll(async () => {
    await cluster?.stop()
  })

  async function host(): Promise<SyncedStore> {
    const store = createSyncedStore({ cluster: cluster.seeds, syncMs: 600_000, clock: () => now })
    onTestFinished(() => store.close())
    await store.ready
    return store
  }

  it('shares the units of many clients, whose counters live in different slots', async () => {
    const rule = testRule('token-bucket', 10, 60_000)
    const [a, b] = [await host(), await host()]
    // 40 client keys spread over the three primaries; each host admits 3 units of each.
    const keys = Array.from({ length: 40 }, (_, i) => `client-${i}`)
    for (const s of [a, b]) for (const k of keys) s.consume(one(rule, k, 3), now)
    // `ready` waited for every primary's connection, so no round fails; a round in flight
    // when the others' units land only learns them on the next, hence the passes.
    let failed = -1
    for (let pass = 0; pass < 10 && failed !== a.failedSyncs + b.failedSyncs; pass++) {
      failed = a.failedSyncs + b.failedSyncs
      for (const s of [a, b]) await s.syncNow()
    }
    expect(a.failedSyncs + b.failedSyncs).toBe(0)
    for (const s of [a, b]) await s.syncNow()
    // The fleet bucket of every client holds both hosts' 3 units, once: 4 left, half each.
    for (const s of [a, b]) {
      for (const k of keys) expect(s.consume(one(rule, k, 0), now)[0]!.remaining).toBe(2)
    }
  })
})
