import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import type { CompiledRule, ConsumeEntry } from '@floodgate/core/algorithms'
import { testRule } from '@floodgate/core/testing'
import { handSyncedHosts } from './helpers/hand-synced-hosts.js'
import { redisAvailable, uniquePrefix } from './helpers/redis.js'

// peek() and a queued request's waitMs must say what consume() then does on the same host:
// after a sync taught it the fleet bucket's level (room or debt), a host refills at its share
// of the rule's rate once the debt is paid, and both answers must account for that.
// Real Redis, an injected clock, rounds run by hand.

const available = await redisAvailable()
const prefix = uniquePrefix('synced-peek-queue')
const MAX_HOSTS = 3

const entry = (rule: CompiledRule, key: string, cost: number, maxWaitMs = 0): ConsumeEntry[] => [
  { rule, key, cost, maxWaitMs, shadow: false },
]

describe.skipIf(!available)('SyncedStore peek and queue waits agree with consume', () => {
  let now = 5_000_000
  const clock = (): number => now
  const hosts = handSyncedHosts(prefix, MAX_HOSTS, clock)
  let run = 0

  /**
   * A shared key in an arbitrary sync state: each host admits some units at once and all
   * sync; then time passes, host 0 admits more, and time passes again.
   */
  async function state(
    rule: CompiledRule,
    n: number,
    admitted: number[],
    gapMs: number,
    more: number,
    laterMs: number,
  ): Promise<string> {
    const key = `k${++run}`
    const fleet = hosts.slice(0, n)
    for (const [i, h] of fleet.entries()) {
      for (let u = 0; u < admitted[i]!; u++) h.consume(entry(rule, key, 1), now)
    }
    await new Promise((resolve) => setImmediate(resolve))
    for (let round = 0; round < 2; round++) for (const h of fleet) await h.syncNow()
    now += gapMs
    for (let u = 0; u < more; u++) hosts[0]!.consume(entry(rule, key, 1), now)
    now += laterMs
    return key
  }

  const arbitraryState = fc.record({
    algorithm: fc.constantFrom('token-bucket' as const, 'gcra' as const),
    n: fc.integer({ min: 2, max: MAX_HOSTS }),
    admitted: fc.array(fc.integer({ min: 0, max: 20 }), {
      minLength: MAX_HOSTS,
      maxLength: MAX_HOSTS,
    }),
    gapMs: fc.integer({ min: 0, max: 3000 }),
    more: fc.integer({ min: 0, max: 5 }),
    laterMs: fc.integer({ min: 0, max: 3000 }),
  })
  // 10 per second, burst 10: one unit per 100 ms.
  const ruleOf = (algorithm: 'token-bucket' | 'gcra'): CompiledRule =>
    testRule(algorithm, 10, 1000, { burst: 10 })

  it("peek's remaining is what consume can take at that time, and no more", async () => {
    await fc.assert(
      fc.asyncProperty(arbitraryState, async (s) => {
        const rule = ruleOf(s.algorithm)
        const key = await state(rule, s.n, s.admitted, s.gapMs, s.more, s.laterMs)
        const h = hosts[0]!
        const seen = h.peek([{ rule, key }], now)[0]!
        if (seen.remaining > 0) {
          expect(h.consume(entry(rule, key, seen.remaining), now)[0]!.allowed).toBe(true)
        }
        expect(h.consume(entry(rule, key, 1), now)[0]!.allowed).toBe(false)
      }),
      { numRuns: 40 },
    )
  }, 120_000)

  it('a request admitted to queue waits what consume tells a refused one, and is paid for when it is over', async () => {
    await fc.assert(
      fc.asyncProperty(
        arbitraryState,
        fc.integer({ min: 1, max: 20_000 }),
        async (s, maxWaitMs) => {
          const rule = ruleOf(s.algorithm)
          const key = await state(rule, s.n, s.admitted, s.gapMs, s.more, s.laterMs)
          const h = hosts[0]!
          // Empty what is left now, so the next request has to wait.
          const left = h.peek([{ rule, key }], now)[0]!.remaining
          if (left > 0) h.consume(entry(rule, key, left), now)
          // What consume tells a request it refuses (nothing is recorded): when it could pass.
          // (A copy: the memory store answers in objects it reuses.)
          const refused = { ...h.consume(entry(rule, key, 1), now)[0]! }
          expect(refused.allowed).toBe(false)
          const queued = h.consume(entry(rule, key, 1, maxWaitMs), now)[0]!
          if (!queued.allowed) {
            expect(refused.retryAfterMs).toBeGreaterThan(maxWaitMs)
            return
          }
          // The queue's wait is the same time, and the request is paid for here at its end.
          expect(queued.waitMs).toBe(refused.retryAfterMs)
          const startMs = now
          now = startMs + queued.waitMs
          expect(h.peek([{ rule, key }], now)[0]!.retryAfterMs).toBe(0)
        },
      ),
      { numRuns: 40 },
    )
  }, 120_000)
})
