import fc from 'fast-check'
import { describe, expect, it, vi } from 'vitest'
import { MAX_RECORDED_LIMITS } from './limiter-client-state.js'
import { createLimiter } from './limiter.js'
import type { Logger } from './logger.js'
import type { RequestFacts } from './request-facts.js'
import type { RuleTier } from './rules/rule.js'
import { MemoryStore } from './stores/memory-store.js'
import { collectUnhandledRejections } from './testing/unhandled-rejections.js'

/**
 * A shared store's record of limit function answers (`Store.recordedLimits`) is read back by
 * `get` and `reset`; whatever it holds, those must not throw, every state must be a limit of
 * the rule, and the good entries (and the rule's own limit) must still be found.
 */

const facts: RequestFacts = { method: 'GET', path: '/', ip: '203.0.113.7', headers: {} }

type Algorithm = 'fixed-window' | 'sliding-window-counter' | 'token-bucket'

/** A limit the rule's function could have answered, as a store records it. */
const GOOD: Record<Algorithm, RuleTier> = {
  'fixed-window': { limit: 7, windowMs: 60_000, burst: 7 },
  'sliding-window-counter': { limit: 7, windowMs: 120_000, burst: 7 },
  'token-bucket': { limit: 7, windowMs: 60_000, burst: 9 },
}

const numberish: fc.Arbitrary<unknown> = fc.oneof(
  fc.constantFrom(0, -0, -1, 1.5, NaN, Infinity, -Infinity, Number.MAX_VALUE, 2 ** 53),
  fc.constantFrom('7', null, undefined, true, {}, [], 10n),
  fc.double(),
)

/** One recorded entry that is not a limit of the rule (or is one with fields of no use). */
const badEntry = (good: RuleTier): fc.Arbitrary<unknown> =>
  fc.oneof(
    fc.anything(),
    fc.record({ limit: numberish, windowMs: numberish, burst: numberish }),
    fc
      .record({ f: fc.constantFrom('limit', 'windowMs', 'burst'), v: numberish })
      .map(({ f, v }) => ({ ...good, [f]: v })),
    fc.constantFrom('limit', 'windowMs', 'burst').map((f) => {
      const t: Record<string, unknown> = { ...good }
      delete t[f]
      return t
    }),
    // A limit that reads like a rule of another kind: the extra fields must not reach the rule.
    fc
      .record({ algorithm: fc.string(), id: fc.string(), cost: numberish })
      .map((extra) => ({ ...good, limit: 8, burst: good.burst === 7 ? 8 : 9, ...extra })),
    // An entry whose limit throws when read (a getter, a Proxy): made in `answer`.
    fc.constant(UNREADABLE),
  )

const UNREADABLE = 'an entry whose limit throws when read'

function unreadable(good: RuleTier): object {
  return {
    ...good,
    get limit(): number {
      throw new Error('unreadable')
    },
  }
}

type Answer =
  | { kind: 'list'; entries: unknown[]; good: boolean }
  | { kind: 'huge'; size: number }
  | { kind: 'other'; value: unknown }
  | { kind: 'rejects' }
  | { kind: 'then-throws' }
  | { kind: 'throws' }

const answerOf = (good: RuleTier): fc.Arbitrary<Answer> =>
  fc.oneof(
    fc
      .record({
        entries: fc.array(badEntry(good), { maxLength: 8 }),
        good: fc.boolean(),
        at: fc.nat(),
      })
      .map(({ entries, good: withGood, at }) => {
        const list = [...entries]
        if (withGood) list.splice(at % (list.length + 1), 0, { ...good })
        return { kind: 'list' as const, entries: list, good: withGood }
      }),
    fc
      .integer({ min: MAX_RECORDED_LIMITS + 1, max: 5000 })
      .map((size) => ({ kind: 'huge' as const, size })),
    fc
      .anything()
      .filter((v) => !Array.isArray(v))
      .map((value) => ({ kind: 'other' as const, value })),
    fc.constantFrom<Answer>({ kind: 'rejects' }, { kind: 'then-throws' }, { kind: 'throws' }),
  )

/** What the store answers to `recordedLimits` for one scripted answer. */
function answer(a: Answer, good: RuleTier): unknown {
  switch (a.kind) {
    case 'list':
      return a.entries.map((e) => (e === UNREADABLE ? unreadable(good) : e))
    case 'huge':
      // Good first, then distinct limits each a valid state: only the first ones are read.
      return [
        { ...good },
        ...Array.from({ length: a.size - 1 }, (_, i) => ({
          ...good,
          limit: 100 + i,
          burst: good.burst === 7 ? 100 + i : good.burst + 100 + i,
        })),
      ]
    case 'other':
      return a.value
    case 'rejects':
      return Promise.reject(new Error('store down'))
    case 'then-throws':
      return {
        then() {
          throw new Error('broken thenable')
        },
      }
    case 'throws':
      throw new Error('store threw')
  }
}

function finiteCount(v: unknown): boolean {
  return typeof v === 'number' && Number.isFinite(v) && v >= 0
}

describe('limits recorded by a shared store', () => {
  const unhandled = collectUnhandledRejections()

  it('garbage never throws out of get, reset or check, and good limits still apply', async () => {
    try {
      const algorithms = fc.constantFrom<Algorithm>(
        'fixed-window',
        'sliding-window-counter',
        'token-bucket',
      )
      await fc.assert(
        fc.asyncProperty(
          algorithms.chain((algorithm) =>
            answerOf(GOOD[algorithm]).map((script) => ({ algorithm, script })),
          ),
          ({ algorithm, script }) => runOne(algorithm, GOOD[algorithm], script),
        ),
        { numRuns: 200 },
      )
    } finally {
      expect(unhandled).toEqual([])
    }
  })
})

async function runOne(algorithm: Algorithm, good: RuleTier, script: Answer): Promise<void> {
  const log = { debug: vi.fn(), info: vi.fn(), warn: vi.fn(), error: vi.fn() } satisfies Logger
  const store = new MemoryStore()
  Object.assign(store, {
    recordLimits: () => undefined,
    recordedLimits: () => answer(script, good),
  })
  let now = 1_000_000
  const limiter = createLimiter({
    rules: [{ id: 'r', algorithm, limit: 5, window: '1m' }],
    limits: { r: () => undefined },
    store,
    clock: () => now,
    logger: log,
  })
  try {
    const states = await limiter.get('203.0.113.7', { rule: 'r' })
    expect(states.length).toBeLessThanOrEqual(1 + MAX_RECORDED_LIMITS)
    for (const s of states) {
      expect(s.rule.id).toBe('r')
      expect(s.rule.algorithm).toBe(algorithm)
      expect(Number.isSafeInteger(s.rule.limit) && s.rule.limit > 0).toBe(true)
      for (const v of [s.limit, s.remaining, s.resetMs, s.bannedForMs, s.rule.windowMs]) {
        expect(finiteCount(v)).toBe(true)
      }
    }
    // The rule's own limit is always there; the good entry whenever it was read.
    expect(states.some((s) => s.rule.limit === 5)).toBe(true)
    if (script.kind === 'huge' || (script.kind === 'list' && script.good)) {
      expect(
        states.some((s) => s.rule.limit === good.limit && s.rule.windowMs === good.windowMs),
      ).toBe(true)
    }
    await limiter.reset('203.0.113.7', { rule: 'r' })
    now += 1
    const d = await limiter.check(facts)
    for (const v of [d.limit, d.remaining, d.resetMs, d.retryAfterMs]) {
      expect(Number.isNaN(v)).toBe(false)
    }
    // A list may hold only entries that are limits (with fields of no use); anything else is named.
    if (script.kind !== 'list') {
      expect(log.warn).toHaveBeenCalledWith(
        expect.objectContaining({ code: 'FG_WRN_STORE_RECORD_MALFORMED', rule: 'r' }),
        expect.stringMatching(/limits recorded for rule "r"/),
      )
    }
  } finally {
    await limiter.close()
  }
}
