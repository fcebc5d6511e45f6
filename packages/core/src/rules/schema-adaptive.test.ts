import { describe, expect, it } from 'vitest'
import { RulesValidationError } from '../errors.js'
import { createLimiter } from '../limiter.js'
import { ruleSchema } from './schema.js'
import { parseRules, type RuleInput } from './schema.js'

function issuesOf(input: unknown): readonly string[] {
  try {
    parseRules(input)
  } catch (e) {
    expect(e).toBeInstanceOf(RulesValidationError)
    return (e as RulesValidationError).issues
  }
  throw new Error('expected the rules to be refused')
}

const rule = (adaptive: Record<string, unknown>, more: Record<string, unknown> = {}): RuleInput[] =>
  [{ id: 'shed', algorithm: 'adaptive', adaptive, ...more }] as RuleInput[]

describe('adaptive rules: defaults', () => {
  it('fills every default and answers 503 unless told otherwise', () => {
    const [r] = parseRules(rule({ target: '250ms' }))
    expect(r).toMatchObject({
      algorithm: 'adaptive',
      limit: 1000,
      windowMs: 10_000,
      burst: 1000,
      cost: 1,
      count: 'all',
      onLimit: { action: 'reject', status: 503 },
      adaptive: {
        percentile: 99,
        targetMs: 250,
        tolerance: 1.5,
        windowMs: 10_000,
        minLimit: 1,
        maxLimit: 1000,
        initialLimit: 20,
        smoothing: 0.5,
        maxDecrease: 0.5,
        maxIncrease: 1,
        minSamples: 20,
        reserve: 0.2,
        gate: undefined,
        priority: 'normal',
      },
    })
  })

  it.each([
    ['the word reject', 'reject', 503],
    ['reject without a status', { action: 'reject' }, 503],
    ['reject with 429', { action: 'reject', status: 429 }, 429],
  ])('onLimit as %s answers %i', (_name, onLimit, status) => {
    const [r] = parseRules(rule({}, { onLimit }))
    expect(r!.onLimit).toEqual({ action: 'reject', status })
  })

  it('keeps the limits given and starts within them', () => {
    const [r] = parseRules(rule({ minLimit: 50, maxLimit: 80 }))
    expect(r!.adaptive).toMatchObject({ minLimit: 50, maxLimit: 80, initialLimit: 50 })
    expect(parseRules(rule({ maxLimit: 5 }))[0]!.adaptive!.initialLimit).toBe(5)
  })

  it('is accepted by the JSON Schema and the checks alike (the field exists in both)', () => {
    const props = (ruleSchema.toJSONSchema() as { properties: Record<string, unknown> }).properties
    expect(props.adaptive).toMatchObject({ type: 'object', additionalProperties: false })
    const fields = Object.keys((props.adaptive as { properties: object }).properties)
    expect(fields).toEqual([
      'percentile',
      'target',
      'tolerance',
      'window',
      'minLimit',
      'maxLimit',
      'initialLimit',
      'smoothing',
      'maxDecrease',
      'maxIncrease',
      'minSamples',
      'reserve',
      'gate',
      'priority',
    ])
  })
})

describe('adaptive rules: refusals name the field', () => {
  it.each<[string, unknown, string]>([
    ['no settings', [{ id: 'a', algorithm: 'adaptive' }], 'rules[0].adaptive: expected an object'],
    [
      'settings on another algorithm',
      [{ id: 'a', limit: 1, window: '1s', adaptive: {} }],
      "rules[0].adaptive: expected no adaptive settings for algorithm 'token-bucket'",
    ],
    [
      'percentile 100',
      rule({ percentile: 100 }),
      'rules[0].adaptive.percentile: expected a percentile',
    ],
    [
      'percentile 0',
      rule({ percentile: 0 }),
      'rules[0].adaptive.percentile: expected a percentile',
    ],
    ['a bad target', rule({ target: 'soon' }), 'rules[0].adaptive.target: expected a duration'],
    ['a zero window', rule({ window: 0 }), 'rules[0].adaptive.window: expected a duration'],
    [
      'minLimit 0',
      rule({ minLimit: 0 }),
      'rules[0].adaptive.minLimit: expected a positive integer',
    ],
    [
      'a huge maxLimit',
      rule({ maxLimit: 2e6 }),
      'rules[0].adaptive.maxLimit: expected a whole number',
    ],
    [
      'minLimit over maxLimit',
      rule({ minLimit: 10, maxLimit: 5 }),
      'rules[0].adaptive.minLimit: expected a minLimit of at most maxLimit (5), got 10',
    ],
    [
      'initialLimit out of bounds',
      rule({ minLimit: 2, maxLimit: 5, initialLimit: 9 }),
      'rules[0].adaptive.initialLimit: expected an initialLimit from minLimit (2) to maxLimit (5), got 9',
    ],
    [
      'smoothing 0',
      rule({ smoothing: 0 }),
      'rules[0].adaptive.smoothing: expected a number above 0',
    ],
    ['maxDecrease 1', rule({ maxDecrease: 1 }), 'rules[0].adaptive.maxDecrease: expected a number'],
    [
      'maxIncrease 11',
      rule({ maxIncrease: 11 }),
      'rules[0].adaptive.maxIncrease: expected a number',
    ],
    [
      'reserve 1',
      rule({ reserve: 1 }),
      'rules[0].adaptive.reserve: expected a number from 0 to 0.9',
    ],
    ['minSamples 0', rule({ minSamples: 0 }), 'rules[0].adaptive.minSamples: expected a positive'],
    ['a bad gate name', rule({ gate: 'a b' }), 'rules[0].adaptive.gate: expected a gate name'],
    [
      'an unknown priority',
      rule({ priority: 'urgent' }),
      "rules[0].adaptive.priority: expected 'normal' or 'background', got \"urgent\"",
    ],
    [
      'a tolerance beside a target',
      rule({ target: '1s', tolerance: 2 }),
      'rules[0].adaptive.tolerance: expected no tolerance beside a target',
    ],
    [
      'an unknown setting',
      rule({ targt: '1s' }),
      'rules[0].adaptive.targt: expected a known field (did you mean "target"?)',
    ],
    [
      'a limit',
      rule({}, { limit: 5 }),
      "rules[0].limit: expected no limit for algorithm 'adaptive'",
    ],
    [
      'a window',
      rule({}, { window: '1s' }),
      "rules[0].window: expected no window for algorithm 'adaptive'",
    ],
    [
      'a rate',
      rule({}, { rate: '1/s' }),
      "rules[0].rate: expected no rate for algorithm 'adaptive'",
    ],
    [
      'tiers',
      rule({}, { tiers: { by: 'user', values: { a: { limit: 1 } } } }),
      "rules[0].tiers: expected no tiers for algorithm 'adaptive'",
    ],
    [
      'count by outcome',
      rule({}, { count: 'failed' }),
      "rules[0].count: expected 'all' for algorithm 'adaptive'",
    ],
    [
      'a queue',
      rule({}, { onLimit: { action: 'queue', maxWait: '1s' } }),
      "rules[0].onLimit.action: expected 'reject' or 'drop': an adaptive rule sheds load at once",
    ],
    [
      'a cost over minLimit',
      rule({ minLimit: 2 }, { cost: 3 }),
      'rules[0].cost: expected a cost of at most adaptive.minLimit (2)',
    ],
  ])('%s', (_name, input, message) => {
    expect(issuesOf(input).some((i) => i.startsWith(message))).toBe(true)
  })

  it('leaves the previous rules in force when a bad adaptive rule is refused', () => {
    const limiter = createLimiter({ rules: rule({ target: '100ms' }) })
    expect(() => limiter.updateRules(rule({ percentile: 120 }))).toThrow(/adaptive\.percentile/)
    expect(limiter.rules[0]!.adaptive!.targetMs).toBe(100)
    expect(limiter.adaptive('shed')).toMatchObject({ limit: 20, targetMs: 100 })
  })

  it('refuses a limit function for an adaptive rule, naming both', () => {
    expect(() => createLimiter({ rules: rule({}), limits: { shed: () => 5 } })).toThrow(
      /rules\[0\]\.algorithm: rule "shed" is adaptive and has a limit function/,
    )
  })
})
