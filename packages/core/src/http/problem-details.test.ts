import { describe, expect, it } from 'vitest'
import type { Decision } from '../decision.js'
import type { Rule } from '../rules/rule.js'
import { retryAfterSeconds } from './headers.js'
import { problemDetails } from './problem-details.js'

const rule = (id: string): Rule => ({ id }) as Rule

describe('problemDetails', () => {
  it.each([
    [0, 1],
    [1, 1],
    [999, 1],
    [1000, 1],
    [1001, 2],
    [59_500, 60],
  ])('retryAfterSeconds(%i) = %i (whole seconds, never 0)', (ms, s) => {
    expect(retryAfterSeconds(ms)).toBe(s)
  })

  it('lists the refusing enforced rules, not shadow or passing ones', () => {
    const outcome = (id: string, allowed: boolean, shadow = false) => ({
      rule: rule(id),
      key: 'k',
      allowed,
      limit: 1,
      remaining: 0,
      resetMs: 0,
      retryAfterMs: 0,
      waitMs: 0,
      shadow,
    })
    const decision = {
      allowed: false,
      action: 'reject',
      status: 503,
      retryAfterMs: 2500,
      rule: rule('b'),
      outcomes: [
        outcome('a', true),
        outcome('b', false),
        outcome('c', false, true),
        outcome('d', false),
      ],
    } as unknown as Decision
    expect(problemDetails(decision)).toStrictEqual({
      type: 'about:blank',
      title: 'Service Unavailable',
      status: 503,
      detail: 'Rate limit exceeded (b, d); retry in 3 s.',
      'violated-policies': ['b', 'd'],
      retryAfter: 3,
    })
  })
})

describe('serializedProblem', () => {
  it('reuses the body while one rule refuses with the same retryAfter', async () => {
    const { serializedProblem } = await import('./problem-details.js')
    const r = rule('solo')
    const decision = (retryAfterMs: number) =>
      ({
        allowed: false,
        action: 'reject',
        status: 429,
        retryAfterMs,
        rule: r,
        outcomes: [{ rule: r, allowed: false, shadow: false }],
      }) as unknown as Decision
    const a = serializedProblem(decision(1500))
    const b = serializedProblem(decision(1200))
    const c = serializedProblem(decision(2500))
    expect(b).toBe(a)
    expect(c).not.toBe(a)
    expect(JSON.parse(c.json)).toStrictEqual(c.body)
    expect(c.body.retryAfter).toBe(3)
  })
})
