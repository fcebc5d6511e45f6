import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import type { AlgorithmName } from '../algorithms/algorithm.js'
import type { Decision, RuleOutcome } from '../decision.js'
import { testRule } from '../testing/test-rule.js'
import { limitField, policyField } from './rate-limit-fields.js'

const ALGORITHMS: AlgorithmName[] = ['fixed-window', 'token-bucket', 'gcra', 'concurrency']
// A few rules reused across runs, so the per-rule string cache is hit as well as filled.
const rules = ALGORITHMS.flatMap((a, i) => [
  testRule(a, 100, 60_000, { id: `r${i}` }).rule,
  testRule(a, 1_000_000_000, 3_600_000, { id: `big-${i}` }).rule,
  testRule(a, 3, 1_500, { id: `odd.${i}` }).rule,
])

const outcome = fc.record({
  rule: fc.constantFrom(...rules),
  key: fc.constant('k'),
  allowed: fc.boolean(),
  limit: fc.constant(100),
  remaining: fc.nat(2_000_000_000),
  resetMs: fc.integer({ min: -10, max: 7_200_000 }),
  retryAfterMs: fc.integer({ min: 0, max: 7_200_000 }),
  waitMs: fc.constant(0),
  shadow: fc.boolean(),
}) satisfies fc.Arbitrary<RuleOutcome>

const decisionOf = (outcomes: RuleOutcome[]): Decision => ({
  allowed: true,
  action: 'allow',
  status: 200,
  limit: 0,
  remaining: 0,
  resetMs: 0,
  retryAfterMs: 0,
  waitMs: 0,
  rule: outcomes[0]?.rule,
  outcomes,
  failedOpen: false,
  decidedAtMs: 0,
})

// Reference model: the header syntax written out plainly, one outcome at a time.
const sec = (ms: number): number => (ms <= 0 ? 0 : Math.ceil(ms / 1000))
function reference(d: Decision): { policy: string; limit: string } {
  const enforced = d.outcomes.filter((o) => !o.shadow)
  const policy = enforced.map((o) =>
    o.rule.algorithm === 'concurrency'
      ? `"${o.rule.id}";q=${o.rule.limit}`
      : `"${o.rule.id}";q=${o.rule.limit};w=${sec(o.rule.windowMs)}`,
  )
  const limit = enforced.map(
    (o) => `"${o.rule.id}";r=${o.remaining};t=${o.allowed ? sec(o.resetMs) : sec(o.retryAfterMs)}`,
  )
  return { policy: policy.join(', '), limit: limit.join(', ') }
}

describe('policyField and limitField', () => {
  it('equal a plain reference model of the RateLimit-Policy and RateLimit syntax', () => {
    fc.assert(
      fc.property(fc.array(outcome, { maxLength: 4 }), (outcomes) => {
        const d = decisionOf(outcomes)
        const want = reference(d)
        expect(policyField(d)).toBe(want.policy)
        expect(limitField(d)).toBe(want.limit)
      }),
      { numRuns: 500 },
    )
  })

  it('send the same policy string for a rule every time', () => {
    const d = decisionOf([
      {
        rule: rules[1]!,
        key: 'k',
        allowed: true,
        limit: 1,
        remaining: 5,
        resetMs: 1,
        retryAfterMs: 0,
        waitMs: 0,
        shadow: false,
      },
    ])
    expect(policyField(d)).toBe('"big-0";q=1000000000;w=3600')
    expect(policyField(d)).toBe(policyField(d))
    expect(limitField(d)).toBe('"big-0";r=5;t=1')
  })
})
