import { describe, expect, it } from 'vitest'
import type { Decision, RuleOutcome } from '../decision.js'
import { formatHeaders } from './headers.js'
import { testRule } from '../testing/test-rule.js'

const outcome = (id: string, over: Partial<RuleOutcome> = {}): RuleOutcome => ({
  rule: testRule('token-bucket', 100, 60_000, { id }).rule,
  key: 'k',
  allowed: true,
  limit: 100,
  remaining: 42,
  resetMs: 16_200,
  retryAfterMs: 0,
  waitMs: 0,
  shadow: false,
  ...over,
})

const decision = (outcomes: RuleOutcome[], over: Partial<Decision> = {}): Decision => ({
  allowed: true,
  action: 'allow',
  status: 200,
  limit: 100,
  remaining: 42,
  resetMs: 16_200,
  retryAfterMs: 0,
  waitMs: 0,
  rule: outcomes[0]?.rule,
  outcomes,
  failedOpen: false,
  decidedAtMs: 1_700_000_000_500,
  ...over,
})

describe('formatHeaders', () => {
  it('writes the IETF draft fields for every enforced rule', () => {
    const d = decision([
      outcome('per-ip'),
      outcome('per-user', { remaining: 7, resetMs: 900 }),
      outcome('trial', { shadow: true }),
    ])
    expect(formatHeaders(d)).toEqual([
      ['RateLimit-Policy', '"per-ip";q=100;w=60, "per-user";q=100;w=60'],
      ['RateLimit', '"per-ip";r=42;t=17, "per-user";r=7;t=1'],
    ])
  })

  it('adds Retry-After in whole seconds, rounded up, at least 1, when refused', () => {
    const refused = outcome('per-ip', { allowed: false, remaining: 0, retryAfterMs: 1_001 })
    const d = decision([refused], {
      allowed: false,
      action: 'reject',
      status: 429,
      retryAfterMs: 1_001,
    })
    expect(formatHeaders(d)).toContainEqual(['Retry-After', '2'])
    expect(formatHeaders(d)).toContainEqual(['RateLimit', '"per-ip";r=0;t=2'])
    const tiny = decision([refused], {
      allowed: false,
      action: 'reject',
      status: 429,
      retryAfterMs: 3,
    })
    expect(formatHeaders(tiny)).toContainEqual(['Retry-After', '1'])
  })

  it('writes legacy fields on request, the reset as epoch seconds from the decision', () => {
    const d = decision([outcome('per-ip')])
    expect(formatHeaders(d, { format: 'legacy' })).toEqual([
      ['X-RateLimit-Limit', '100'],
      ['X-RateLimit-Remaining', '42'],
      // (1_700_000_000_500 + 16_200) / 1000, rounded up, as express-rate-limit rounds it.
      ['X-RateLimit-Reset', '1700000017'],
    ])
    expect(formatHeaders(d, { format: 'both' })).toHaveLength(5)
  })

  it("writes draft-7's combined fields, as express-rate-limit's standardHeaders: 'draft-7'", () => {
    const d = decision([outcome('per-ip'), outcome('per-user', { shadow: true })], {
      limit: 100,
      remaining: 99,
      resetMs: 29_001,
    })
    expect(formatHeaders(d, { format: 'draft-7' })).toEqual([
      ['RateLimit-Policy', '100;w=60'],
      ['RateLimit', 'limit=100, remaining=99, reset=30'],
    ])
    expect(
      formatHeaders(decision([outcome('t', { shadow: true })]), { format: 'draft-7' }),
    ).toEqual([])
  })

  it('claims nothing while failing open or when no rule matched', () => {
    expect(formatHeaders(decision([outcome('per-ip')], { failedOpen: true }))).toEqual([])
    expect(formatHeaders(decision([]))).toEqual([])
  })
})
