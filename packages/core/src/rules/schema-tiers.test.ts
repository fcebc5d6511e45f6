import { describe, expect, it } from 'vitest'
import { RulesValidationError } from '../errors.js'
import { parseRules } from './schema.js'

function issuesOf(input: unknown): readonly string[] {
  try {
    parseRules(input)
  } catch (e) {
    expect(e).toBeInstanceOf(RulesValidationError)
    return (e as RulesValidationError).issues
  }
  throw new Error('expected the rules to be refused')
}

const plans = {
  by: 'header:X-Plan',
  values: { free: { limit: 100 }, pro: { limit: 1000, window: '1m' } },
  default: 'free',
}

describe('parseRules: tiers', () => {
  it('normalises tiers: the window defaults to the rule, burst to the limit; default fills the rule', () => {
    const [rule] = parseRules([{ id: 'plan', key: 'user', window: '1m', tiers: plans }])
    expect(rule).toMatchObject({
      limit: 100,
      windowMs: 60_000,
      burst: 100,
      count: 'all',
      tiers: {
        by: 'header:x-plan',
        default: 'free',
        values: {
          free: { limit: 100, windowMs: 60_000, burst: 100 },
          pro: { limit: 1000, windowMs: 60_000, burst: 1000 },
        },
      },
    })
  })

  it('without a default, the rule keeps its own limit for requests of no known tier', () => {
    const [rule] = parseRules([
      {
        id: 'plan',
        rate: '10/s',
        algorithm: 'gcra',
        tiers: { by: 'custom:plan', values: { pro: { rate: '100/s', burst: 300 } } },
      },
    ])
    expect(rule).toMatchObject({ limit: 10, windowMs: 1000, burst: 10 })
    expect(rule!.tiers).toEqual({
      by: 'custom:plan',
      default: undefined,
      values: { pro: { limit: 100, windowMs: 1000, burst: 300 } },
    })
  })

  it('concurrency tiers have a limit and no window', () => {
    const [rule] = parseRules([
      {
        id: 'c',
        algorithm: 'concurrency',
        tiers: { by: 'user', values: { a: { limit: 2 }, b: { limit: 5 } }, default: 'a' },
      },
    ])
    expect(rule).toMatchObject({ limit: 2, tiers: { values: { b: { limit: 5, windowMs: 0 } } } })
  })

  it.each<[string, Record<string, unknown>, string]>([
    [
      'ip as the tier key',
      { by: 'ip', values: { a: { limit: 1 } } },
      'rules[0].tiers.by: expected',
    ],
    [
      'an unknown default',
      { ...plans, default: 'gold' },
      'rules[0].tiers.default: expected the name of a tier in values (free, pro), got "gold"',
    ],
    [
      'a bad tier name',
      { by: 'user', values: { 'a b': { limit: 1 } } },
      `rules[0].tiers.values["a b"]: expected a tier name of 1-64 letters`,
    ],
    [
      'a tier without limit',
      { by: 'user', values: { a: { window: '1s' } } },
      'rules[0].tiers.values.a.limit: expected a positive integer, got nothing',
    ],
    [
      'a misspelt tier field',
      { by: 'user', values: { a: { limt: 1 } } },
      'rules[0].tiers.values.a.limt: expected a known field (did you mean "limit"?)',
    ],
    [
      'a misspelt tiers field',
      { by: 'user', valeus: {} },
      'rules[0].tiers.valeus: expected a known field (did you mean "values"?)',
    ],
    [
      'no tiers at all',
      { by: 'user', values: {} },
      'rules[0].tiers.values: expected from 1 to 32 tiers',
    ],
  ])('refuses %s', (_, tierInput, message) => {
    const issues = issuesOf([{ id: 'r', window: '1m', limit: 5, tiers: tierInput }])
    expect(issues.join('\n')).toContain(message)
  })

  it('refuses a rule limit beside tiers.default, and a tier burst without a bucket', () => {
    expect(issuesOf([{ id: 'r', limit: 5, window: '1m', tiers: plans }])).toContain(
      "rules[0].limit: either tiers.default, or a limit of the rule's own for requests without a known tier, not both",
    )
    expect(
      issuesOf([
        {
          id: 'r',
          algorithm: 'fixed-window',
          limit: 5,
          window: '1m',
          tiers: { by: 'user', values: { a: { limit: 9, burst: 20 } } },
        },
      ]).join('\n'),
    ).toContain("rules[0].tiers.values.a.burst: expected no burst for algorithm 'fixed-window'")
  })

  it('refuses a tier that the rule cost could never pass, and a tiered rule with no limit', () => {
    expect(
      issuesOf([
        { id: 'r', cost: 5, window: '1m', tiers: { ...plans, values: { free: { limit: 2 } } } },
      ]).join('\n'),
    ).toContain("rules[0].cost: expected a cost of at most the rule's capacity (2)")
    expect(
      issuesOf([{ id: 'r', window: '1m', tiers: { by: 'user', values: { a: { limit: 1 } } } }]),
    ).toContain(
      'rules[0].limit: expected a positive integer for requests without a known tier (or name one with tiers.default), got nothing',
    )
  })

  it('refuses a tier named __proto__ instead of losing it', () => {
    const input = JSON.parse(
      '[{"id":"r","limit":1,"window":"1s","tiers":{"by":"user","values":{"__proto__":{"limit":5}}}}]',
    ) as unknown
    expect(issuesOf(input).join('\n')).toContain(
      'rules[0].tiers.values.__proto__: expected a tier name',
    )
  })
})

describe('parseRules: count', () => {
  it('defaults to all and takes failed or successful', () => {
    expect(parseRules([{ id: 'a', limit: 1, window: '1s' }])[0]!.count).toBe('all')
    expect(parseRules([{ id: 'a', limit: 5, window: '15m', count: 'failed' }])[0]!.count).toBe(
      'failed',
    )
  })

  it('refuses an unknown mode and a concurrency rule that counts by outcome', () => {
    expect(issuesOf([{ id: 'a', limit: 1, window: '1s', count: 'errors' }])).toEqual([
      `rules[0].count: expected 'all', 'failed' or 'successful', got "errors"`,
    ])
    expect(issuesOf([{ id: 'a', limit: 1, algorithm: 'concurrency', count: 'failed' }])).toEqual([
      `rules[0].count: expected 'all' for algorithm 'concurrency' (a slot is given back when the request ends, whatever its outcome), got "failed"`,
    ])
  })
})
