import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { MemoryStore } from '@floodgate/core'
import { algorithms, type AlgorithmName, type ConsumeEntry } from '@floodgate/core/algorithms'
import { testRule } from '@floodgate/core/testing'
import { redisKey } from '@floodgate/redis'
import { callerClockStore } from './helpers/caller-clock-store.js'
import { redisAvailable, uniquePrefix } from './helpers/redis.js'
import { answers } from './helpers/results.js'

const available = await redisAvailable()
const prefix = uniquePrefix('corrupt')

const LIMIT = 3
const WINDOW_MS = 1000
const T0 = 1_700_000_000_000

/**
 * Numbers a state of the right size may hold when Floodgate did not write them: non-finite,
 * negative, fractional where a count or a ring place is whole, huge, tiny, and plausible ones
 * (times near now, small counts) among them.
 */
const stored: fc.Arbitrary<number> = fc.oneof(
  fc.constantFrom(
    NaN,
    Infinity,
    -Infinity,
    -1,
    -1e300,
    1e300,
    2 ** 62,
    2 ** 62 + 2 ** 11,
    2 ** 61,
    1e18,
    0.5,
    7,
    5e-324,
    -0,
    0,
    1,
    2,
  ),
  fc.integer({ min: -3000, max: 3000 }).map((d) => T0 + d),
  fc.double(),
)

/** The doubles of a state: the algorithm's own size, or leases (pairs) for concurrency. */
function stateSize(alg: AlgorithmName): fc.Arbitrary<number> {
  if (alg === 'concurrency') return fc.integer({ min: 1, max: 3 }).map((pairs) => pairs * 2)
  const rule = testRule(alg, LIMIT, WINDOW_MS)
  return fc.constant(algorithms[alg].stateSize(rule.params))
}

/** What core takes as an answer: a boolean verdict and finite numbers of at least 0. */
function wellFormed(r: unknown): boolean {
  const a = r as Record<string, unknown>
  return (
    typeof a.allowed === 'boolean' &&
    ['waitMs', 'limit', 'remaining', 'resetMs', 'retryAfterMs'].every(
      (f) => typeof a[f] === 'number' && Number.isFinite(a[f]) && a[f] >= 0,
    )
  )
}

describe.skipIf(!available)(
  'RedisStore on a state of the right size that Floodgate did not write',
  () => {
    const redis = callerClockStore(prefix)

    let run = 0
    for (const alg of Object.keys(algorithms) as AlgorithmName[]) {
      it(`${alg}: answers well-formed, admits no more than a fresh client and the limit, and fails no other client of the batch (property)`, async () => {
        const rule = testRule(alg, LIMIT, WINDOW_MS)
        await fc.assert(
          fc.asyncProperty(
            stateSize(alg).chain((n) => fc.array(stored, { minLength: n, maxLength: n })),
            fc.array(fc.integer({ min: 0, max: 400 }), { minLength: 1, maxLength: 12 }),
            async (doubles, steps) => {
              run++
              const bad = `bad-${run}`
              const good = `good-${run}`
              const raw = Buffer.alloc(doubles.length * 8)
              doubles.forEach((d, i) => raw.writeDoubleLE(d, i * 8))
              await redis.admin.set(redisKey(prefix, bad, rule.stateId), raw)
              // The models: the honest client as MemoryStore decides it, and the corrupted one as
              // a fresh client would be decided.
              const mem = new MemoryStore()
              const fresh = new MemoryStore()
              const entry = (key: string): ConsumeEntry[] => [
                { rule, key, cost: 1, maxWaitMs: 0, shadow: false },
              ]
              let now = T0
              let admitted = 0
              let freshAdmitted = 0
              for (const dt of steps) {
                now += dt
                // Started together: one script call decides both.
                const [b, g] = await Promise.all([
                  redis.store.consume(entry(bad), now),
                  redis.store.consume(entry(good), now),
                ])
                expect(answers(g), `the other client at +${now - T0} ms`).toEqual(
                  answers(mem.consume(entry(good), now)),
                )
                expect(b, `the corrupted client at +${now - T0} ms`).toHaveLength(1)
                expect(wellFormed(b[0]), JSON.stringify(b[0])).toBe(true)
                if (b[0]!.allowed) {
                  admitted++
                  // A slot taken is a slot held: give it back so only the limit counts.
                  if (alg === 'concurrency') {
                    await redis.store.refund([{ rule, key: bad, cost: 1, lease: b[0]!.lease }], now)
                  }
                }
                const f = fresh.consume(entry(bad), now)[0]!
                if (f.allowed) {
                  freshAdmitted++
                  if (alg === 'concurrency') fresh.refund([{ rule, key: bad, cost: 1 }], now)
                }
              }
              expect(admitted).toBeLessThanOrEqual(freshAdmitted + LIMIT)
            },
          ),
          { numRuns: 40 },
        )
      })
    }
  },
)
