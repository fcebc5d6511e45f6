import fc from 'fast-check'
import { describe, expect, it, onTestFinished } from 'vitest'
import type { CompiledRule, ConsumeEntry } from '@floodgate/core/algorithms'
import { testRule } from '@floodgate/core/testing'
import { createSyncedStore, type SyncedStore } from '@floodgate/redis'
import { hashTag } from '../src/redis-key.js'
import { REDIS_URL, adminConnection, redisAvailable, uniquePrefix } from './helpers/redis.js'

// A host that reads a fleet counter for the first time holds the debt it finds there, even when
// no other host has synced the key lately (it is the only one sharing it now): a penalty or the
// fleet's overshoot outlives the hosts that charged it (a rolling deploy, a restart).

const available = await redisAvailable()
const prefix = uniquePrefix('synced-fresh-debt')

const one = (rule: CompiledRule, key: string, cost = 1): ConsumeEntry[] => [
  { rule, key, cost, maxWaitMs: 0, shadow: false },
]

describe.skipIf(!available)('SyncedStore reading a fleet counter in debt afresh', () => {
  const redis = adminConnection(prefix)
  const now = 1_000_000

  async function host(): Promise<SyncedStore> {
    const store = createSyncedStore({ url: REDIS_URL, prefix, syncMs: 600_000, clock: () => now })
    onTestFinished(() => store.close())
    await store.ready
    return store
  }

  /** Make every host's last sync of the counter an hour old (Redis time), as if time passed. */
  async function ageHosts(counter: string): Promise<void> {
    const [sec] = await redis.admin.time()
    const old = String(Number(sec) * 1000 - 3_600_000)
    const fields = await redis.admin.hgetall(counter)
    for (const name of Object.keys(fields)) {
      if (name.startsWith('p:')) await redis.admin.hset(counter, name, old)
    }
  }

  it('a new host alone on a key penalised by a host gone since refuses until the debt is paid', async () => {
    const rule = testRule('token-bucket', 10, 1000)
    const key = 'penalised-then-alone'
    const counter = `${prefix}:{${hashTag(key)}}:${rule.stateId}:synced`
    const a = await host()
    a.penalize([{ rule, key, cost: 1000 }], now) // 100 s of debt
    await a.syncNow() // reads the counter
    await a.syncNow() // sends the 1000 units
    await a.close()
    await ageHosts(counter)

    const b = await host()
    // The cold start: b has not read the key yet.
    expect(b.consume(one(rule, key), now)[0]!.allowed).toBe(true)
    await b.syncNow() // reads the counter: about 1000 units of debt, b the only host
    const r = b.consume(one(rule, key), now)[0]!
    expect(r.allowed).toBe(false)
    expect(r.retryAfterMs).toBeGreaterThan(90_000)
    await b.syncNow()
    expect(b.consume(one(rule, key), now)[0]!.allowed).toBe(false)
  })

  let run = 0
  it('after its first read a host admits no more than the fleet bucket has room for (property)', async () => {
    const rules = [testRule('token-bucket', 10, 1000), testRule('gcra', 10, 1000)]
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom(...rules),
        fc.integer({ min: 0, max: 12 }), // units host a admits
        fc.integer({ min: 0, max: 40 }), // units host a charges as a penalty
        fc.boolean(), // whether a's last sync is long past (b is then alone on the key)
        fc.integer({ min: 1, max: 3 }), // units b admits before its first read lands (the first tracks the key)
        async (rule, admitted, penalty, aged, cold) => {
          const key = `k${++run}`
          const counter = `${prefix}:{${hashTag(key)}}:${rule.stateId}:synced`
          const a = createSyncedStore({ url: REDIS_URL, prefix, syncMs: 600_000, clock: () => now })
          const b = createSyncedStore({ url: REDIS_URL, prefix, syncMs: 600_000, clock: () => now })
          try {
            await a.ready
            await b.ready
            for (let i = 0; i < admitted; i++) a.consume(one(rule, key), now)
            if (penalty > 0) a.penalize([{ rule, key, cost: penalty }], now)
            await a.syncNow()
            await a.syncNow()
            if (aged) await ageHosts(counter)
            let coldAdmitted = 0
            for (let i = 0; i < cold; i++)
              if (b.consume(one(rule, key), now)[0]!.allowed) coldAdmitted++
            await b.syncNow() // b's first read
            // The fleet bucket's level now (Redis refilled it a little since the read).
            const [sec, micro] = await redis.admin.time()
            const redisNow = Number(sec) * 1000 + Math.floor(Number(micro) / 1000)
            const tat = Number((await redis.admin.hget(counter, 'f')) ?? '0')
            const used = Math.max(0, (tat - redisNow) / 100)
            const room = Math.max(0, Math.floor(10 - used - coldAdmitted + 1e-6))
            const probe = b.peek([{ rule, key }], now)[0]!
            expect(Number.isFinite(probe.remaining) && probe.remaining >= 0).toBe(true)
            let more = 0
            while (more <= 12 && b.consume(one(rule, key), now)[0]!.allowed) more++
            expect(more, `room ${room}, used ${used}`).toBeLessThanOrEqual(room)
          } finally {
            await a.close()
            await b.close()
          }
        },
      ),
      { numRuns: 40 },
    )
  })
})
