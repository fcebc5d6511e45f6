import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import type { Decision } from '../decision.js'
import type { LimitAnswer } from '../limiter-limits.js'
import { createLimiter } from '../limiter.js'
import type { RequestFacts } from '../request-facts.js'
import type { RuleInput } from '../rules/schema.js'
import type { Store } from '../stores/store.js'

/** Options of {@link describeClientStateProperty}. */
export interface ClientStatePropertyOptions {
  /** The store for one run: a fresh one, or one shared by every run (keys differ per run). */
  readonly store: () => Store
  /** fast-check runs. @default 150 */
  readonly runs?: number | undefined
}

type Plan = 'none' | 'tiers' | 'tiers-default' | 'function'

interface RuleSpec {
  readonly algorithm: 'token-bucket' | 'gcra' | 'fixed-window' | 'sliding-window-counter'
  readonly limit: number
  readonly windowS: number
  readonly key: 'ip' | 'header:x-user'
  readonly plan: Plan
  readonly ban: { after: number; withinS: number; forS: number } | null
}

interface Step {
  readonly client: 0 | 1
  readonly tier: string | undefined
  readonly advanceMs: number
}

const TIERS = ['free', 'pro', 'gold'] as const
const tierArb = fc.constantFrom<string | undefined>(...TIERS, undefined)

const ruleArb: fc.Arbitrary<RuleSpec> = fc.record({
  algorithm: fc.constantFrom('token-bucket', 'gcra', 'fixed-window', 'sliding-window-counter'),
  limit: fc.integer({ min: 1, max: 4 }),
  windowS: fc.integer({ min: 1, max: 6 }),
  key: fc.constantFrom('ip', 'header:x-user'),
  plan: fc.constantFrom<Plan>('none', 'tiers', 'tiers-default', 'function'),
  ban: fc.option(
    fc.record({
      after: fc.integer({ min: 1, max: 3 }),
      withinS: fc.integer({ min: 1, max: 10 }),
      forS: fc.integer({ min: 1, max: 10 }),
    }),
  ),
})

const stepArb: fc.Arbitrary<Step> = fc.record({
  client: fc.constantFrom<0 | 1>(0, 1),
  tier: tierArb,
  advanceMs: fc.integer({ min: 0, max: 2500 }),
})

/** The rule as data; a tier's limit differs from the rule's own, so their states differ. */
function ruleOf(spec: RuleSpec, i: number): RuleInput {
  const base: RuleInput = {
    id: `r${i}`,
    algorithm: spec.algorithm,
    key: spec.key,
    ...(spec.ban === null
      ? {}
      : {
          ban: {
            after: spec.ban.after,
            within: spec.ban.withinS * 1000,
            for: spec.ban.forS * 1000,
          },
        }),
  }
  const window = spec.windowS * 1000
  if (spec.plan === 'tiers' || spec.plan === 'tiers-default') {
    const values = {
      free: { limit: spec.limit },
      pro: { limit: spec.limit + 2, window: window * 2 },
    }
    return spec.plan === 'tiers'
      ? { ...base, limit: spec.limit + 1, window, tiers: { by: 'header:x-plan', values } }
      : { ...base, window, tiers: { by: 'header:x-plan', values, default: 'free' } }
  }
  return { ...base, limit: spec.limit, window }
}

/** A limit function of the plan: another limit for `pro` and `gold`, the rule's own else. */
function limitFunction(spec: RuleSpec) {
  return (_req: unknown, facts: RequestFacts): LimitAnswer => {
    const plan = facts.headers['x-plan']
    if (plan === 'pro') return spec.limit + 1
    if (plan === 'gold') return { limit: spec.limit + 3, window: spec.windowS * 2000 }
    return undefined
  }
}

/** What two decisions must share for two clients judged alike (their keys differ). */
function summary(d: Decision): unknown {
  return {
    allowed: d.allowed,
    action: d.action,
    status: d.status,
    limit: d.limit,
    remaining: d.remaining,
    resetMs: d.resetMs,
    retryAfterMs: d.retryAfterMs,
    banned: d.banned,
    rule: d.rule?.id,
    outcomes: d.outcomes.map((o) => ({
      rule: o.rule.id,
      limit: o.limit,
      windowMs: o.rule.windowMs,
      allowed: o.allowed,
      remaining: o.remaining,
      resetMs: o.resetMs,
      retryAfterMs: o.retryAfterMs,
      banned: o.banned,
    })),
  }
}

let runCounter = 0

/**
 * The property that `limiter.get` and `limiter.reset` reach every state a client can be
 * counted under (a rule's own, each tier, each answer of a limit function, its ban), on one
 * store: for random rule sets (tiers, limit functions, bans) and random traffic,
 *
 * - `get(client)` reports, for each rule of the next decision, the state that decision uses:
 *   it refuses when the state reads as banned or short of the cost, and an admitted request
 *   leaves one unit less than `get` read;
 * - after `reset(client)` (its plan named or not) the client's next decision equals a fresh
 *   client's.
 *
 * @param name - the store, for the test title
 * @param options - the store and the number of runs
 */
export function describeClientStateProperty(
  name: string,
  options: ClientStatePropertyOptions,
): void {
  describe(`${name}: get and reset reach every state a client is counted under`, () => {
    it('get reads the state the next decision uses; after reset the client is a fresh one', async () => {
      await fc.assert(
        fc.asyncProperty(
          fc.array(ruleArb, { minLength: 1, maxLength: 3 }),
          fc.array(stepArb, { minLength: 0, maxLength: 30 }),
          tierArb,
          fc.boolean(),
          async (specs, steps, tier, resetNamesPlan) => {
            const run = ++runCounter
            let now = 1_700_000_000_000 + run * 1_000_000
            const limits = Object.fromEntries(
              specs.flatMap((s, i) => (s.plan === 'function' ? [[`r${i}`, limitFunction(s)]] : [])),
            )
            const limiter = createLimiter({
              rules: specs.map(ruleOf),
              store: options.store(),
              clock: () => now,
              limits,
              decisionTimeoutMs: 2000,
              topClients: false,
            })
            const ip = (c: number) => `10.${(run >> 8) & 255}.${run & 255}.${c + 1}`
            const user = (c: number) => `u${run}-${c}`
            const factsOf = (c: number, plan: string | undefined): RequestFacts => ({
              method: 'GET',
              path: '/',
              ip: ip(c),
              headers: { 'x-user': user(c), ...(plan === undefined ? {} : { 'x-plan': plan }) },
            })
            const keyOf = (c: number, plan: string | undefined) => ({
              ip: ip(c),
              'header:x-user': user(c),
              ...(plan === undefined ? {} : { 'header:x-plan': plan }),
            })
            {
              for (const s of steps) {
                now += s.advanceMs
                await limiter.check(factsOf(s.client, s.tier))
              }

              // get: the state each outcome of the next decision was judged on.
              const states = await limiter.get(keyOf(0, tier))
              const next = await limiter.check(factsOf(0, tier))
              expect(next.failedOpen).toBe(false)
              for (const o of next.outcomes) {
                const read = states.filter(
                  (s) =>
                    s.rule.id === o.rule.id &&
                    s.limit === o.limit &&
                    s.rule.windowMs === o.rule.windowMs &&
                    s.rule.burst === o.rule.burst,
                )
                if (read.length === 0) {
                  // A limit the function never answered: no state, so the client is fresh,
                  // unless the rule bans it (a ban holds whatever the limit).
                  expect(specs[Number(o.rule.id.slice(1))]!.plan).toBe('function')
                  const ruleStates = states.filter((s) => s.rule.id === o.rule.id)
                  if (ruleStates.some((s) => s.bannedForMs > 0)) {
                    expect(o).toMatchObject({ allowed: false, banned: true })
                    continue
                  }
                  const charged = next.allowed ? 1 : 0
                  expect(o).toMatchObject({ allowed: true, remaining: o.rule.burst - charged })
                  continue
                }
                expect(read, `get reports one state for ${o.rule.id}`).toHaveLength(1)
                const s = read[0]!
                if (s.bannedForMs > 0) {
                  expect(o).toMatchObject({ allowed: false, banned: true })
                  continue
                }
                expect(o.allowed, `${o.rule.id} admits iff get read a unit left`).toBe(
                  s.remaining >= 1,
                )
                if (next.allowed) expect(o.remaining).toBe(s.remaining - 1)
              }

              // reset: the client's next decision is a fresh client's.
              now += 1
              await limiter.reset(keyOf(0, resetNamesPlan ? tier : undefined))
              const afterReset = await limiter.check(factsOf(0, tier))
              const fresh = await limiter.check(factsOf(2, tier))
              expect(summary(afterReset)).toEqual(summary(fresh))
            }
          },
        ),
        { numRuns: options.runs ?? 150 },
      )
    }, 120_000)
  })
}
