import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import type { Decision } from './decision.js'
import { createLimiter } from './limiter.js'
import type { RequestFacts } from './request-facts.js'
import type { RuleInput } from './rules/schema.js'
import { asyncMemoryStore } from './testing/async-memory-store.js'

/**
 * A route cost is the app's number, often computed from what the client sends (a page size, a
 * batch length): any positive finite number reaches the limiter, and `rule.cost × route cost`
 * may be past what the algorithms' arithmetic stays finite in, or overflow to Infinity. Such a
 * request costs more than any rule's capacity. The model: on a fresh state a request passes
 * exactly when `rule.cost × route cost <= capacity`, a refused one charges nothing, and no
 * decision is a fail-open.
 */

const ALGORITHMS = [
  'token-bucket',
  'gcra',
  'leaky-bucket',
  'fixed-window',
  'sliding-window-counter',
  'sliding-window-log',
  'concurrency',
] as const

const silent = { debug() {}, info() {}, warn() {}, error() {} }

const facts = (cost: number): RequestFacts => ({
  method: 'GET',
  path: '/api/items',
  ip: '203.0.113.7',
  headers: {},
  cost,
})

/** Whole costs (exact in every algorithm), and costs far past any capacity, up to the largest double. */
const routeCost = fc.oneof(
  fc.integer({ min: 1, max: 40 }),
  fc.double({ min: 2 ** 40, max: Number.MAX_VALUE, noNaN: true }),
  fc.constantFrom(1e300, 1e305, 1e308, Number.MAX_VALUE, 2 ** 53, 2 ** 53 + 2),
)

const setup = fc.record({
  algorithm: fc.constantFrom(...ALGORITHMS),
  limit: fc.integer({ min: 1, max: 50 }),
  ruleCost: fc.integer({ min: 1, max: 50 }),
  routeCost,
  // A second rule takes the request off the one-rule short path; an async store off the sync one.
  second: fc.boolean(),
  async: fc.boolean(),
})

function ruleOf(
  id: string,
  algorithm: (typeof ALGORITHMS)[number],
  limit: number,
  cost: number,
): RuleInput {
  return algorithm === 'concurrency'
    ? { id, algorithm, limit, cost }
    : { id, algorithm, limit, window: '1m', cost }
}

describe('a route cost past every capacity', () => {
  it('is refused and charges nothing, whatever its size: never a fail-open', async () => {
    await fc.assert(
      fc.asyncProperty(setup, async (s) => {
        fc.pre(s.ruleCost <= s.limit)
        const rules = [ruleOf('r', s.algorithm, s.limit, s.ruleCost)]
        if (s.second) rules.push({ id: 'wide', limit: 1_000_000, window: '1m' })
        const limiter = createLimiter({
          rules,
          clock: () => 1_000_000,
          logger: silent,
          ...(s.async ? { store: asyncMemoryStore() } : {}),
        })
        try {
          const d: Decision = await limiter.check(facts(s.routeCost))
          const units = s.ruleCost * s.routeCost
          expect(d.failedOpen).toBe(false)
          expect(d.allowed).toBe(units <= s.limit)
          if (!d.allowed) {
            // Nothing was charged: a request of the rule's own cost finds the full capacity (remaining counts units).
            const next = await limiter.check(facts(1))
            expect(next.allowed).toBe(true)
            const own = next.outcomes.find((o) => o.rule.id === 'r')!
            expect(own.remaining).toBe(s.limit - s.ruleCost)
          }
          limiter.release(d, 'succeeded')
        } finally {
          await limiter.close()
        }
      }),
      { numRuns: 300 },
    )
  })

  it('limiter.limit() refuses such a cost too, without failing open', async () => {
    await fc.assert(
      fc.asyncProperty(setup, async (s) => {
        fc.pre(s.ruleCost <= s.limit)
        const limiter = createLimiter({
          rules: [{ ...ruleOf('r', s.algorithm, s.limit, s.ruleCost), match: false }],
          clock: () => 1_000_000,
          logger: silent,
          ...(s.async ? { store: asyncMemoryStore() } : {}),
        })
        try {
          const d = await limiter.limit('u1', { rule: 'r', cost: s.routeCost })
          expect(d.failedOpen).toBe(false)
          expect(d.allowed).toBe(s.ruleCost * s.routeCost <= s.limit)
          limiter.release(d, 'succeeded')
        } finally {
          await limiter.close()
        }
      }),
      { numRuns: 200 },
    )
  })

  it('1e308 on a 5-a-minute rule is refused (it passed unjudged as a store failure)', async () => {
    const limiter = createLimiter({
      rules: [{ id: 'r', limit: 5, window: '1m' }],
      clock: () => 1_000_000,
      logger: silent,
    })
    const d = await limiter.check(facts(1e308))
    expect(d).toMatchObject({ allowed: false, failedOpen: false, status: 429 })
    await limiter.close()
  })
})

describe('a penalty past every capacity', () => {
  it('keeps the client refused with finite answers, never unjudged', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom('token-bucket', 'gcra'),
        fc.integer({ min: 1, max: 50 }),
        routeCost,
        async (algorithm, limit, units) => {
          const limiter = createLimiter({
            rules: [{ id: 'r', algorithm, limit, window: '1m' }],
            clock: () => 1_000_000,
            logger: silent,
          })
          try {
            await limiter.penalty('203.0.113.7', units)
            const d = await limiter.check(facts(1))
            expect(d.failedOpen).toBe(false)
            // Debt of `units` past a full bucket of `limit`: the next unit passes only if it fits.
            expect(d.allowed).toBe(units + 1 <= limit)
            const [state] = await limiter.get('203.0.113.7')
            expect(Number.isFinite(state!.resetMs)).toBe(true)
          } finally {
            await limiter.close()
          }
        },
      ),
      { numRuns: 200 },
    )
  })
})
