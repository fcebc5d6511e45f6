import { runInNewContext } from 'node:vm'
import fc from 'fast-check'
import { afterEach, describe, expect, it, vi } from 'vitest'
import type { Decision } from './decision.js'
import { createLimiter, type LimiterOptions } from './limiter.js'
import type { Logger } from './logger.js'
import type { RequestFacts } from './request-facts.js'
import type { RuleInput } from './rules/schema.js'
import { MAX_SLIDING_LOG_LIMIT } from './rules/algorithm-catalog.js'
import { MemoryStore } from './stores/memory-store.js'

interface Req {
  readonly plan?: string
}

const facts = (plan?: string, over: Partial<RequestFacts<Req>> = {}): RequestFacts<Req> => ({
  method: 'GET',
  path: '/api',
  ip: '203.0.113.7',
  headers: plan === undefined ? {} : { 'x-plan': plan },
  request: { plan },
  ...over,
})

function logger() {
  const log = { debug: vi.fn(), info: vi.fn(), warn: vi.fn(), error: vi.fn() }
  return log satisfies Logger
}

function clocked(rules: RuleInput[], over: Partial<LimiterOptions<Req>> = {}) {
  let now = 1_000_000
  const limiter = createLimiter<Req>({ rules, clock: () => now, ...over })
  const check = (plan?: string): Decision => {
    const d = limiter.check(facts(plan))
    if (d instanceof Promise) throw new Error('expected a synchronous decision')
    return d
  }
  const admitted = (plan: string | undefined, n: number): number => {
    let ok = 0
    for (let i = 0; i < n; i++) if (check(plan).allowed) ok++
    return ok
  }
  return { limiter, check, admitted, advance: (ms: number) => (now += ms) }
}

const tiered: RuleInput = {
  id: 'plan',
  key: 'ip',
  window: '1m',
  algorithm: 'fixed-window',
  tiers: {
    by: 'header:x-plan',
    values: { free: { limit: 2 }, pro: { limit: 5 } },
    default: 'free',
  },
}

describe('tiers: limits chosen per request from a key part', () => {
  it('gives each tier its limit and names it in the decision', () => {
    const { check, admitted } = clocked([tiered])
    expect(check('pro')).toMatchObject({ limit: 5, remaining: 4 })
    expect(admitted('pro', 10)).toBe(4)
    // Another tier of the same client is another state.
    expect(admitted('free', 10)).toBe(2)
    // A missing or unknown tier is the default tier: the same state as 'free'.
    expect(check(undefined)).toMatchObject({ allowed: false, limit: 2 })
    expect(check('gold')).toMatchObject({ allowed: false, limit: 2 })
  })

  it('downgrade: the lower tier allows its own limit, never what was left of the higher one', () => {
    const { check, admitted } = clocked([tiered])
    expect(admitted('pro', 2)).toBe(2) // 3 left on pro
    // Now on free: 2 per window, counted apart from pro, so never the 3 pro had left.
    expect(admitted('free', 10)).toBe(2)
    expect(check('free')).toMatchObject({ allowed: false, limit: 2, remaining: 0 })
  })

  it('upgrade: the higher tier starts from its own state; a switch back finds the lower one as left', () => {
    const { admitted, advance } = clocked([tiered])
    expect(admitted('free', 5)).toBe(2) // free spent
    expect(admitted('pro', 10)).toBe(5) // pro has its own allowance
    expect(admitted('free', 1)).toBe(0) // back on free within the window: still spent
    advance(60_000)
    expect(admitted('free', 5)).toBe(2)
  })

  it("without a default, a request of no known tier gets the rule's own limit", () => {
    const { check } = clocked(
      [
        {
          id: 'p',
          limit: 1,
          window: '1m',
          key: 'ip',
          tiers: { by: 'custom:plan', values: { pro: { limit: 3 } } },
        },
      ],
      { keys: { plan: (req) => req.plan } },
    )
    expect(check('pro')).toMatchObject({ limit: 3, remaining: 2 })
    expect(check('other')).toMatchObject({ limit: 1, remaining: 0 })
    expect(check(undefined)).toMatchObject({ allowed: false, limit: 1 })
  })

  it('a rules swap keeps the state of tiers that did not change and resets one that did', () => {
    const { limiter, admitted } = clocked([tiered])
    expect(admitted('free', 2)).toBe(2)
    expect(admitted('pro', 5)).toBe(5)
    limiter.updateRules([
      { ...tiered, tiers: { ...tiered.tiers!, values: { free: { limit: 2 }, pro: { limit: 6 } } } },
    ] as RuleInput[])
    expect(admitted('free', 1)).toBe(0)
    expect(admitted('pro', 10)).toBe(6)
  })

  it('refuses a tier key part with no key builder at startup', () => {
    expect(() =>
      createLimiter({
        rules: [{ ...tiered, tiers: { ...tiered.tiers!, by: 'custom:plan' } }] as RuleInput[],
      }),
    ).toThrow(
      /rules\[0\]\.tiers\.by: key "custom:plan" needs a key builder registered as keys\.plan/,
    )
  })
})

describe('limits: a function of the request chooses the limit', () => {
  afterEach(() => {
    vi.useRealTimers()
  })

  const rule: RuleInput = { id: 'per-user', limit: 1, window: '1m', algorithm: 'fixed-window' }
  const byPlan = (req: Req) =>
    req.plan === 'pro' ? 4 : req.plan === 'team' ? { limit: 3, window: '1h' } : undefined

  it("answers a limit, a limit with a window, or undefined for the rule's own", () => {
    const { check, admitted } = clocked([rule], { limits: { 'per-user': byPlan } })
    expect(check('pro')).toMatchObject({ limit: 4, remaining: 3 })
    expect(admitted('pro', 5)).toBe(3)
    const team = check('team')
    expect(team).toMatchObject({ limit: 3, remaining: 2 })
    expect(team.rule?.windowMs).toBe(3_600_000)
    expect(admitted(undefined, 3)).toBe(1)
  })

  it("a bad answer or a throw applies the rule's own limit and warns", () => {
    const log = logger()
    const answers: unknown[] = [
      0,
      -1,
      1.5,
      'ten',
      { limit: 5, window: 'soon' },
      { limit: 5, burst: 9 },
    ]
    let i = 0
    const { check } = clocked([rule], {
      logger: log,
      failOpenLogIntervalMs: 1,
      limits: {
        'per-user': () => {
          if (i >= answers.length) throw new Error('plan service down')
          return answers[i++] as number
        },
      },
    })
    const seen = new Set<number>()
    for (let k = 0; k <= answers.length; k++) seen.add(check().limit)
    expect([...seen]).toEqual([1])
    const warned = log.warn.mock.calls.filter(
      ([f]) => (f as { code?: string }).code === 'FG_WRN_LIMIT_INVALID',
    )
    expect(warned.length).toBeGreaterThan(0)
    expect(String(warned[0]![1])).toContain("the rule's own limit applied")
  })

  it("may answer with a promise; one that misses timeoutMs is the rule's own limit", async () => {
    vi.useFakeTimers()
    const never = new Promise<number>(() => {})
    const limiter = createLimiter<Req>({
      rules: [rule],
      decisionTimeoutMs: 20,
      limits: { 'per-user': (req) => (req.plan === 'slow' ? never : Promise.resolve(4)) },
    })
    const fast = limiter.check(facts('pro'))
    expect(fast).toBeInstanceOf(Promise)
    await expect(fast).resolves.toMatchObject({ limit: 4, remaining: 3 })
    const slow = limiter.check(facts('slow'))
    await vi.advanceTimersByTimeAsync(25)
    await expect(slow).resolves.toMatchObject({ allowed: true, limit: 1, remaining: 0 })
  })

  it('keeps the state of its answers across a rules swap that keeps the rule', () => {
    const { limiter, admitted } = clocked([rule, { id: 'other', limit: 9, window: '1s' }], {
      limits: { 'per-user': byPlan },
    })
    expect(admitted('pro', 4)).toBe(4)
    limiter.updateRules([rule])
    expect(admitted('pro', 1)).toBe(0)
  })

  it('refuses a rule that has both tiers and a limit function', () => {
    expect(() => createLimiter({ rules: [tiered], limits: { plan: () => 3 } })).toThrow(
      /rules\[0\]\.tiers: rule "plan" has tiers and a limit function \(limits\.plan\)/,
    )
    expect(() => createLimiter({ rules: [rule], limits: { 'per-user': 3 as never } })).toThrow(
      /limits\.per-user: expected a function, got 3/,
    )
  })

  it('warns about a limit function for a rule id no rule has', () => {
    const log = logger()
    createLimiter({ rules: [rule], logger: log, limits: { 'per-usr': () => 3 } })
    expect(log.warn).toHaveBeenCalledWith(
      expect.objectContaining({ code: 'FG_WRN_LIMIT_INVALID', rule: 'per-usr' }),
      expect.stringContaining('limits.per-usr: no rule has this id'),
    )
  })

  it("an answer past what the algorithm can hold (a sliding-window-log over 10 000) is the rule's own limit, warned; the request is judged", () => {
    fc.assert(
      fc.property(
        fc.integer({ min: MAX_SLIDING_LOG_LIMIT + 1, max: Number.MAX_SAFE_INTEGER }),
        fc.boolean(),
        (limit, asObject) => {
          const log = logger()
          const { check } = clocked(
            [{ id: 'log', algorithm: 'sliding-window-log', limit: 2, window: '1m' }],
            { logger: log, limits: { log: () => (asObject ? { limit } : limit) } },
          )
          const decisions = [check(), check(), check()]
          expect(decisions.map((d) => [d.allowed, d.limit, d.failedOpen])).toEqual([
            [true, 2, false],
            [true, 2, false],
            [false, 2, false],
          ])
          expect(log.warn).toHaveBeenCalledWith(
            expect.objectContaining({ code: 'FG_WRN_LIMIT_INVALID', rule: 'log' }),
            expect.stringContaining("the rule's own limit applied"),
          )
        },
      ),
      { numRuns: 50 },
    )
    // The largest limit a sliding-window-log rule may be written with is a limit it may answer.
    const { check } = clocked(
      [{ id: 'log', algorithm: 'sliding-window-log', limit: 2, window: '1m' }],
      { limits: { log: () => MAX_SLIDING_LOG_LIMIT } },
    )
    expect(check()).toMatchObject({ limit: MAX_SLIDING_LOG_LIMIT, failedOpen: false })
  })

  it('bounds the distinct limits one rule can answer', () => {
    let n = 0
    const store = new MemoryStore()
    const { check } = clocked([rule], { store, limits: { 'per-user': () => ++n } })
    const limits = new Set<number>()
    for (let i = 0; i < 200; i++) limits.add(check().limit)
    // 64 answers got states of their own; the rest were counted against the rule's own limit.
    expect(limits.size).toBe(64)
  })

  it('bounds the distinct limits one rule can answer across rules swaps that keep it', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 1, max: 4 }),
        fc.integer({ min: 1, max: 120 }),
        async (swaps, perSwap) => {
          // A new limit on every request (2, 3, …), never the rule's own (1).
          let n = 1
          const { limiter, check } = clocked([rule], { limits: { 'per-user': () => ++n } })
          const limits = new Set<number>()
          for (let s = 0; s <= swaps; s++) {
            for (let i = 0; i < perSwap; i++) limits.add(check().limit)
            limiter.updateRules([rule])
          }
          const answered = Math.min(64, perSwap * (swaps + 1))
          limits.delete(1) // the rule's own limit, applied once 64 answers are spent
          expect(limits.size).toBe(answered)
          // get and reset read every state the answers made, beside the rule's own.
          expect(await limiter.get('203.0.113.7')).toHaveLength(1 + answered)
        },
      ),
      { numRuns: 40 },
    )
  })

  it("a store's failed record of an answer is logged, whatever kind of thenable it fails with", async () => {
    const unhandled: unknown[] = []
    const onUnhandled = (reason: unknown) => unhandled.push(reason)
    process.on('unhandledRejection', onUnhandled)
    try {
      // A rejected promise of another realm (a store built in a vm context or an iframe-like
      // sandbox), and a thenable that is not a promise: neither is `instanceof Promise` here.
      const failures: Array<() => PromiseLike<void>> = [
        () => runInNewContext('Promise.reject(new Error("record refused"))') as Promise<void>,
        () =>
          ({
            then: (_ok: unknown, fail?: (e: unknown) => void) =>
              fail?.(new Error('record refused')),
          }) as unknown as PromiseLike<void>,
      ]
      for (const fail of failures) {
        const log = logger()
        const store = new MemoryStore()
        const limiter = createLimiter<Req>({
          rules: [rule],
          store: Object.assign(store, { recordLimits: fail as () => Promise<void> }),
          logger: log,
          limits: { 'per-user': () => 4 },
        })
        expect(limiter.check(facts('pro'))).toMatchObject({ limit: 4 })
        await new Promise((resolve) => setTimeout(resolve, 20))
        expect(log.warn).toHaveBeenCalledWith(
          expect.objectContaining({ rule: 'per-user' }),
          expect.stringContaining('did not record a limit function answer'),
        )
      }
      expect(unhandled).toEqual([])
    } finally {
      process.off('unhandledRejection', onUnhandled)
    }
  })
})
