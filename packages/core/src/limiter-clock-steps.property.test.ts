import fc from 'fast-check'
import { afterEach, describe, expect, it, vi } from 'vitest'
import { STATE_TIME_HORIZON_MS } from './algorithms/algorithm.js'
import { createLimiter } from './limiter.js'
import type { RequestFacts } from './request-facts.js'
import { ALGORITHM_NAMES } from './rules/algorithm-catalog.js'
import { MemoryStore } from './stores/memory-store.js'

// The limiter's default clock is the wall clock (Date.now), which an NTP step, a restored VM
// snapshot or an operator can set back. Before the horizon, every state written while the
// clock ran ahead stood still at its own time after the step: a client that had reached its
// limit then was refused until the clock caught up again, an hour for an hour's step, and a
// full MemoryStore could not drop those states to make room for new clients.

const T0 = Date.UTC(2026, 0, 1)
const YEAR_MS = 365 * 86_400_000
// Every algorithm that keeps a time: concurrency counts slots only.
const TIMED = ALGORITHM_NAMES.filter((a) => a !== 'concurrency')
const facts: RequestFacts = { method: 'GET', path: '/', ip: '203.0.113.9', headers: {} }

/**
 * Back to real timers, after letting the default clock forget the reading it shares within a
 * turn: its `setImmediate` is a fake one here, and dropped with the fake timers it would leave
 * that reading in place for the next run.
 */
function realTimers(): void {
  if (vi.isFakeTimers()) vi.advanceTimersByTime(0)
  vi.useRealTimers()
}

afterEach(realTimers)

describe('the wall clock steps back further than the horizon', () => {
  it('a client that reached its limit while the clock ran ahead is decided as a new client afterwards (property)', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom(...TIMED),
        fc.integer({ min: 1, max: 5 }),
        // Past the horizon from the state's times: a window's start is up to a window (1 s)
        // before the request that wrote it.
        fc.oneof(
          fc.integer({ min: STATE_TIME_HORIZON_MS + 1001, max: 10 * STATE_TIME_HORIZON_MS }),
          fc.integer({ min: STATE_TIME_HORIZON_MS + 1001, max: 10 * YEAR_MS }),
        ),
        fc.integer({ min: 1, max: 12 }),
        fc.array(fc.integer({ min: 0, max: 1500 }), { minLength: 1, maxLength: 12 }),
        async (algorithm, limit, aheadMs, before, gaps) => {
          vi.useFakeTimers({ now: T0 + aheadMs })
          const rules = [{ id: 'r', algorithm, limit, window: '1s' }]
          const stepped = createLimiter({ store: new MemoryStore(), rules })
          // While the clock runs ahead: requests until (and past) the limit.
          for (let i = 0; i < before; i++) await stepped.check(facts)
          // The step back; from here on a new limiter is the model.
          vi.setSystemTime(T0)
          // Lets the default clock forget the reading it shares within a turn.
          vi.advanceTimersByTime(0)
          const fresh = createLimiter({ store: new MemoryStore(), rules })
          // The first request comes at the step: the clock is then more than the horizon
          // behind every time the state holds, and the state it writes replaces the old one.
          for (const [i, gap] of gaps.entries()) {
            const got = await stepped.check(facts)
            const want = await fresh.check(facts)
            vi.advanceTimersByTime(gap)
            expect(
              { allowed: got.allowed, remaining: got.remaining, retryAfterMs: got.retryAfterMs },
              `request ${i} after the step back`,
            ).toEqual({
              allowed: want.allowed,
              remaining: want.remaining,
              retryAfterMs: want.retryAfterMs,
            })
          }
          await stepped.close()
          await fresh.close()
          realTimers()
        },
      ),
      { numRuns: 150 },
    )
  })

  it('an hour back: a client limited to 2 per second is admitted at 1 per second at once (20 of 20), not an hour later', async () => {
    for (const algorithm of TIMED) {
      vi.useFakeTimers({ now: T0 + 3_600_000 })
      const limiter = createLimiter({
        store: new MemoryStore(),
        rules: [{ id: 'r', algorithm, limit: 2, window: '1s' }],
      })
      for (let i = 0; i < 3; i++) await limiter.check(facts)
      vi.setSystemTime(T0)
      let admitted = 0
      for (let i = 0; i < 20; i++) {
        vi.advanceTimersByTime(1000)
        if ((await limiter.check(facts)).allowed) admitted++
      }
      expect(admitted, algorithm).toBe(20)
      await limiter.close()
      realTimers()
    }
  })

  it('a full MemoryStore makes room: the states dated past the horizon read as fresh, so they are dropped for new clients (property)', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom(...TIMED),
        fc.integer({ min: STATE_TIME_HORIZON_MS + 1001, max: 10 * YEAR_MS }),
        fc.integer({ min: 1, max: 16 }),
        async (algorithm, aheadMs, newcomers) => {
          vi.useFakeTimers({ now: T0 + aheadMs })
          const limiter = createLimiter({
            store: new MemoryStore({ maxKeys: 16 }),
            rules: [{ id: 'r', algorithm, limit: 2, window: '1s' }],
          })
          const client = (i: number): RequestFacts => ({
            ...facts,
            ip: `10.0.${i >> 8}.${i & 255}`,
          })
          // Every slot taken while the clock runs ahead, by clients with something held; as
          // many newcomers as slots find room after the step.
          for (let i = 0; i < 16; i++) await limiter.check(client(i))
          vi.setSystemTime(T0)
          vi.advanceTimersByTime(0)
          for (let i = 0; i < newcomers; i++) {
            const d = await limiter.check(client(1000 + i))
            expect(d.allowed, `newcomer ${i}`).toBe(true)
          }
          await limiter.close()
          realTimers()
        },
      ),
      { numRuns: 60 },
    )
  })

  it('a step back within the horizon stands still: nothing refills, so no client gains from it', async () => {
    vi.useFakeTimers({ now: T0 + STATE_TIME_HORIZON_MS })
    const limiter = createLimiter({
      store: new MemoryStore(),
      rules: [{ id: 'r', algorithm: 'token-bucket', limit: 2, window: '1s' }],
    })
    expect((await limiter.check(facts)).allowed).toBe(true)
    expect((await limiter.check(facts)).allowed).toBe(true)
    vi.setSystemTime(T0) // back by exactly the horizon
    vi.advanceTimersByTime(400)
    // Answered as at the time the state was written: empty, a token back 500 ms after it.
    expect(await limiter.check(facts)).toMatchObject({ allowed: false, retryAfterMs: 500 })
    await limiter.close()
  })
})
