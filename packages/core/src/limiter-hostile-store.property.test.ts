import fc from 'fast-check'
import { describe, expect, it, vi } from 'vitest'
import type { AlgorithmResult } from './algorithms/algorithm.js'
import type { Decision } from './decision.js'
import { createLimiter } from './limiter.js'
import type { Logger } from './logger.js'
import type { RequestFacts } from './request-facts.js'
import type { RuleInput } from './rules/schema.js'
import type { Store } from './stores/store.js'
import { collectUnhandledRejections } from './testing/unhandled-rejections.js'

const facts: RequestFacts = { method: 'GET', path: '/', ip: '203.0.113.7', headers: {} }

function logger() {
  const log = { debug: vi.fn(), info: vi.fn(), warn: vi.fn(), error: vi.fn() }
  return log satisfies Logger
}

/** A well-formed result, allowed, for a rule of limit 5. */
const fine = (): AlgorithmResult => ({
  allowed: true,
  waitMs: 0,
  limit: 5,
  remaining: 4,
  resetMs: 1000,
  retryAfterMs: 0,
})

/** What each numeric field of a hostile result may hold: numbers of every kind, or no number. */
const numberish: fc.Arbitrary<unknown> = fc.oneof(
  fc.constantFrom(0, -0, 1, 2.5, 1e300, Number.MAX_VALUE, -1, NaN, Infinity, -Infinity),
  fc.constantFrom('3', null, undefined, true, {}, [], 10n),
  fc.double(),
  fc.nat(2 ** 40),
)

const field = fc.constantFrom('limit', 'remaining', 'resetMs', 'retryAfterMs', 'waitMs')

/** One result: well-formed, or with one field (or the verdict) replaced, removed or renamed. */
const hostileResult: fc.Arbitrary<unknown> = fc.oneof(
  fc.constant(fine()),
  fc.record({ f: field, v: numberish }).map(({ f, v }) => ({ ...fine(), [f]: v })),
  field.map((f) => {
    const r: Record<string, unknown> = { ...fine() }
    delete r[f]
    return r
  }),
  fc.anything().map((v) => ({ ...fine(), allowed: v })),
  fc.constantFrom(null, undefined, 0, 'ok', []),
  fc.dictionary(fc.string(), fc.anything()).map((extra) => ({ ...extra, ...fine() })),
  // A wait the store had no right to answer: the rule queues for at most 200 ms, or not at all.
  fc
    .oneof(fc.integer({ min: 1, max: 2 ** 31 + 10 }), fc.constantFrom(201, 1e10, Number.MAX_VALUE))
    .map((waitMs) => ({ ...fine(), waitMs })),
)

/** The reference: what the contract calls one well-formed result for an entry of `maxWaitMs`. */
function wellFormed(r: unknown, maxWaitMs: number): boolean {
  if (typeof r !== 'object' || r === null || Array.isArray(r)) return false
  const a = r as Record<string, unknown>
  const count = (v: unknown): boolean => typeof v === 'number' && Number.isFinite(v) && v >= 0
  return (
    typeof a.allowed === 'boolean' &&
    count(a.limit) &&
    count(a.remaining) &&
    count(a.resetMs) &&
    count(a.retryAfterMs) &&
    count(a.waitMs) &&
    (a.waitMs as number) <= maxWaitMs
  )
}

const RULES: Record<'reject' | 'queue', RuleInput> = {
  reject: { id: 'r', limit: 5, window: '1m' },
  queue: {
    id: 'r',
    algorithm: 'token-bucket',
    limit: 5,
    window: '1m',
    onLimit: { action: 'queue', maxWait: '200ms', maxQueue: 5 },
  },
}

describe('a custom store that breaks the contract of consume()', () => {
  const unhandled = collectUnhandledRejections()

  it('fails open, logged naming the fault, on any answer but one well-formed result per entry, through check() and limit(); the next request is judged (property)', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.oneof(
          fc.array(hostileResult, { minLength: 1, maxLength: 1 }),
          fc.array(hostileResult, { maxLength: 3 }),
        ),
        fc.constantFrom<'reject' | 'queue'>('reject', 'queue'),
        fc.boolean(),
        fc.constantFrom('check', 'limit'),
        async (answer, action, async, via) => {
          let next: unknown = answer
          const store: Store = {
            consume: (entries) => {
              const value = next
              next = entries.map(() => fine())
              return (async ? Promise.resolve(value) : value) as readonly AlgorithmResult[]
            },
            refund: () => undefined,
          }
          const log = logger()
          const limiter = createLimiter({ rules: [RULES[action]], store, logger: log })
          const ask = (): Decision | Promise<Decision> =>
            via === 'check' ? limiter.check(facts) : limiter.limit('203.0.113.7', { rule: 'r' })
          const d = await ask()
          const maxWaitMs = action === 'queue' ? 200 : 0
          const valid = answer.length === 1 && wellFormed(answer[0], maxWaitMs)
          expect(d.failedOpen).toBe(!valid)
          if (!valid) {
            expect(d).toMatchObject({ allowed: true, action: 'allow', waitMs: 0 })
            // Nothing to wait for: a queue timer never sees the store's number.
            await expect(limiter.waitInQueue(d)).resolves.toBe(true)
            expect(log.warn).toHaveBeenCalledTimes(1)
            const [fields, message] = log.warn.mock.calls[0]!
            expect(message).toMatch(/fail-open/)
            expect(fields).toMatchObject({ code: 'FG_WRN_STORE_FAILED_OPEN' })
            const err = (fields as { err: { code: string; message: string } }).err
            expect(err.code).toBe('FG_ERR_STORE_ANSWER_INVALID')
            expect(err.message).toMatch(/^store answered .+/)
          } else {
            expect(d.waitMs).toBeLessThanOrEqual(maxWaitMs)
            limiter.release(d)
          }
          // The limiter keeps working: the store's next answer is judged.
          expect((await ask()).failedOpen).toBe(false)
          await limiter.close()
        },
      ),
      { numRuns: 300 },
    )
    expect(unhandled).toEqual([])
  })

  it("a wait past the rule's maxWait is named in the log line, and no queue timer is armed for it", async () => {
    for (const [action, waitMs] of [
      ['reject', 1e10],
      ['queue', 3e9],
      ['queue', 201],
    ] as const) {
      const log = logger()
      const store: Store = { consume: () => [{ ...fine(), waitMs }], refund: () => undefined }
      const limiter = createLimiter({ rules: [RULES[action]], store, logger: log })
      const d = await limiter.check(facts)
      expect(d).toMatchObject({ allowed: true, failedOpen: true, action: 'allow', waitMs: 0 })
      const err = (log.warn.mock.calls[0]![0] as { err: Error }).err
      expect(err.message).toContain(`waitMs ${waitMs} in result 0`)
      expect(err.message).toContain(`maxWaitMs (${action === 'queue' ? 200 : 0})`)
    }
  })
})

describe('a custom store that breaks the contract of peek()', () => {
  it('limiter.get rejects with FG_ERR_STORE_ANSWER_INVALID, naming the fault, on any answer but one well-formed result per state; never hands out its numbers (property)', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.oneof(
          fc.array(hostileResult, { minLength: 1, maxLength: 1 }),
          fc.array(hostileResult, { maxLength: 3 }),
          fc.constantFrom(null, undefined, 'ok', {}),
        ),
        fc.boolean(),
        async (answer, async) => {
          const store: Store = {
            consume: (entries) => entries.map(() => fine()),
            refund: () => undefined,
            peek: () => (async ? Promise.resolve(answer) : answer) as readonly AlgorithmResult[],
          }
          const limiter = createLimiter({ rules: [RULES.reject], store })
          const valid = Array.isArray(answer) && answer.length === 1 && wellFormed(answer[0], 0)
          const got = limiter.get('203.0.113.7')
          if (valid) {
            const [state] = await got
            const r = answer[0] as AlgorithmResult
            expect(state).toMatchObject({ limit: r.limit, remaining: r.remaining })
          } else {
            await expect(got).rejects.toMatchObject({
              code: 'FG_ERR_STORE_ANSWER_INVALID',
              message: expect.stringMatching(/^store answered .+/) as unknown,
            })
          }
        },
      ),
      { numRuns: 300 },
    )
  })
})

describe('a custom store that rejects with a value that cannot be read as text', () => {
  const unhandled = collectUnhandledRejections()

  it("a ban's reset or penalize rejecting with a Proxy whose toString throws: check() still answers the refusal, nothing is left unhandled", async () => {
    // Typed as an Error for the rejection: what the store rejects with is its own choice.
    const unreadable = new Proxy(
      {},
      {
        get: () => {
          throw new Error('read boom')
        },
      },
    ) as Error
    const store: Store = {
      consume: (entries) =>
        entries.map((e) =>
          e.cost === 0 ? fine() : { ...fine(), allowed: false, retryAfterMs: 5 },
        ),
      refund: () => undefined,
      reset: () => Promise.reject(unreadable),
      penalize: () => Promise.reject(unreadable),
    }
    const limiter = createLimiter({
      rules: [{ id: 'b', limit: 1, window: '1m', ban: { after: 1, within: '1m', for: '1m' } }],
      store,
    })
    const d = await Promise.race([
      limiter.check(facts),
      new Promise<'hung'>((r) => setTimeout(() => r('hung'), 500)),
    ])
    expect(d).toMatchObject({ allowed: false, status: 429 })
    await new Promise((r) => setTimeout(r, 10))
    expect(unhandled).toEqual([])
  })
})

/** Things a broken store throws or rejects with: errors and values that are not errors. */
// Typed as Errors for the rejections: what a store rejects with is its own choice.
const thrown = (): Error[] =>
  [
    new Error('refund boom'),
    null,
    undefined,
    'text',
    new Proxy(
      {},
      {
        get: () => {
          throw new Error('read boom')
        },
      },
    ),
  ] as unknown as Error[]

describe('a custom store whose side calls fail, on every request', () => {
  const unhandled = collectUnhandledRejections()

  it('a refund (a slot released) that throws or rejects, whatever it throws, is logged once per failOpenLogIntervalMs with the count of the others, under FG_WRN_STORE_REFUND_FAILED', async () => {
    for (const err of thrown()) {
      for (const async of [false, true]) {
        let now = 1_000_000
        const log = logger()
        const store: Store = {
          consume: (entries) => entries.map(() => fine()),
          refund: () => {
            if (async) return Promise.reject(err)
            throw err
          },
        }
        const limiter = createLimiter({
          rules: [{ id: 'slots', algorithm: 'concurrency', limit: 5 }],
          store,
          logger: log,
          clock: () => now,
          failOpenLogIntervalMs: 1000,
        })
        for (let i = 0; i < 20; i++) limiter.release(await limiter.check(facts))
        await new Promise((r) => setTimeout(r, 0))
        expect(log.warn).toHaveBeenCalledTimes(1)
        expect(log.warn.mock.calls[0]![0]).toMatchObject({ code: 'FG_WRN_STORE_REFUND_FAILED' })
        now += 1000
        limiter.release(await limiter.check(facts))
        await new Promise((r) => setTimeout(r, 0))
        expect(log.warn).toHaveBeenCalledTimes(2)
        expect(log.warn.mock.calls[1]![0]).toMatchObject({ suppressed: 19 })
        expect(limiter.counters().total.failedOpen).toBe(0)
      }
    }
    expect(unhandled).toEqual([])
  })

  it('a ban whose refusals cannot be recorded (penalize or reset throws or rejects) is logged once per failOpenLogIntervalMs under FG_WRN_BAN_NOT_RECORDED; every refusal stands', async () => {
    for (const err of thrown()) {
      for (const async of [false, true]) {
        const log = logger()
        const fail = (): Promise<void> => {
          if (async) return Promise.reject(err)
          throw err
        }
        const store: Store = {
          // The ban check (cost 0) finds no ban; the request and its counted refusal are refused.
          consume: (entries) =>
            entries.map((e) =>
              e.cost === 0 ? fine() : { ...fine(), allowed: false, retryAfterMs: 5 },
            ),
          refund: () => undefined,
          reset: fail,
          penalize: fail,
        }
        const limiter = createLimiter({
          rules: [{ id: 'b', limit: 1, window: '1m', ban: { after: 1, within: '1m', for: '1m' } }],
          store,
          logger: log,
          clock: () => 1_000_000,
        })
        for (let i = 0; i < 20; i++) {
          expect(await limiter.check(facts)).toMatchObject({ allowed: false, status: 429 })
        }
        expect(log.warn).toHaveBeenCalledTimes(1)
        expect(log.warn.mock.calls[0]![0]).toMatchObject({ code: 'FG_WRN_BAN_NOT_RECORDED' })
      }
    }
    expect(unhandled).toEqual([])
  })
})
