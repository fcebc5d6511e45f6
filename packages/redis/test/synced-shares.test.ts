import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import type { ConsumeEntry } from '@floodgate/core/algorithms'
import { testRule } from '@floodgate/core/testing'
import { handSyncedHosts } from './helpers/hand-synced-hosts.js'
import { redisAvailable, uniquePrefix } from './helpers/redis.js'

// A deterministic fleet: N SyncedStores on one real Redis, an injected clock, rounds run by
// hand (syncNow), no timer in play. Between two rounds the hosts together must not admit more
// than one shared bucket would from the level they all learned: each spends only its share of
// the room and of the refill. Redis's own clock refills the fleet bucket for the few real ms a
// case takes; that is measured and allowed for.

const available = await redisAvailable()
const prefix = uniquePrefix('synced-shares')
const MAX_HOSTS = 6
// 100 per second, burst 20: one unit per 10 ms.
const rule = testRule('token-bucket', 100, 1000, { burst: 20 })
const rate = rule.params.limit / rule.params.windowMs
const burst = rule.params.burst
const entry = (key: string): ConsumeEntry[] => [{ rule, key, cost: 1, maxWaitMs: 0, shadow: false }]

describe.skipIf(!available)('SyncedStore shares between rounds', () => {
  let now = 1_000_000
  const clock = (): number => now
  // The timer never fires during a case; early rounds are 60 s apart at least.
  const hosts = handSyncedHosts(prefix, MAX_HOSTS, clock)
  let run = 0

  it('a host that sends first counts the hosts that only read the key so far', async () => {
    await fc.assert(
      fc.asyncProperty(fc.integer({ min: 2, max: MAX_HOSTS }), async (n) => {
        const key = `k${++run}`
        const fleet = hosts.slice(0, n)
        // All meet a new client at once: each admits a unit and reads the key; then each
        // sends its unit, the first of them before any other has sent.
        for (const h of fleet) expect(h.consume(entry(key), now)[0]!.allowed).toBe(true)
        // Every read goes out (the store sends it on the next turn of the event loop); a round
        // waits for its host's read to land, then sends.
        await new Promise((resolve) => setImmediate(resolve))
        for (const h of fleet) await h.syncNow()
        // Each now holds its share of the room left (at least one unit), not a bucket of its own.
        const left = fleet.map(
          (h) => h.consume([{ ...entry(key)[0]!, cost: 0 }], now)[0]!.remaining,
        )
        expect(left.reduce((a, b) => a + b, 0)).toBeLessThanOrEqual(burst - n + n)
      }),
      { numRuns: 10 },
    )
  }, 60_000)

  it('N hosts that learned the same level admit, until the next round, what one bucket would', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 2, max: MAX_HOSTS }),
        // The fleet bucket's level the hosts learn: room left, or a debt.
        fc.integer({ min: 0, max: 3 * burst }),
        // How long until the next round, and how often each host is offered a request.
        fc.integer({ min: 1, max: 800 }),
        fc.constantFrom(1, 2, 3),
        async (n, level, gapMs, everyMs) => {
          const key = `k${++run}`
          const fleet = hosts.slice(0, n)
          const startedMs = Date.now()
          // Each host admits one unit, reads the key, sends its unit; then one host charges
          // the rest of the level; a second round teaches every host the level and the count.
          for (const h of fleet) expect(h.consume(entry(key), now)[0]!.allowed).toBe(true)
          for (const h of fleet) await h.syncNow()
          if (level > n) fleet[0]!.penalize([{ rule, key, cost: level - n }], now)
          for (const h of fleet) await h.syncNow()
          for (const h of fleet) await h.syncNow()
          // Redis refilled the fleet bucket for the real time the rounds took.
          const refilledByRedis = rate * (Date.now() - startedMs)
          const used = Math.max(level, n)
          const start = now
          let admitted = 0
          for (let t = everyMs; t <= gapMs; t += everyMs) {
            now = start + t
            for (const h of fleet) if (h.consume(entry(key), now)[0]!.allowed) admitted++
          }
          now = start + gapMs + 1
          // One bucket at `used` (room or debt) that refills for gapMs admits this much, at most;
          // each host may round its share of the room up to one unit.
          const room = burst - used + refilledByRedis
          const shared = Math.max(0, room) + rate * gapMs - Math.max(0, -room)
          expect(admitted).toBeLessThanOrEqual(Math.max(0, shared) + n)
        },
      ),
      { numRuns: 60 },
    )
  }, 120_000)
})
