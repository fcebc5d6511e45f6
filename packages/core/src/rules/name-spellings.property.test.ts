import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { RulesValidationError } from '../errors.js'
import { parseRules } from './schema.js'

// Header names are case-insensitive, so the schema lower-cases them: in a match's `headers`
// and in the key parts of a deny or allow list. Two spellings of one name in one object would
// become one entry, and which one survived would depend on the order of the object's keys,
// which a store does not keep (PostgreSQL's jsonb, as the rules service stores rules, sorts
// them). Such a rule is refused naming both spellings; any other means the same in any order.

const spellings = (name: string): fc.Arbitrary<string> =>
  fc
    .array(fc.boolean(), { minLength: name.length, maxLength: name.length })
    .map((upper) => [...name].map((ch, i) => (upper[i] ? ch.toUpperCase() : ch)).join(''))

// A JSON object written as text with its members in the order given, as a client sends it.
const jsonObject = (entries: readonly (readonly [string, unknown])[]): Record<string, unknown> =>
  JSON.parse(
    `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${JSON.stringify(v)}`).join(',')}}`,
  ) as Record<string, unknown>

const entries = <T>(names: fc.Arbitrary<string>, values: fc.Arbitrary<T>) =>
  fc.uniqueArray(fc.tuple(names, values), { selector: ([k]) => k, minLength: 1, maxLength: 4 })

const headerConditions = entries(
  fc.oneof(spellings('x-plan'), spellings('x-tenant')),
  fc.oneof(fc.constant(true as const), fc.constantFrom('free', 'pro')),
)
const listKeys = entries(
  fc.oneof(
    spellings('api-key').map((n) => `header:${n}`),
    fc.constantFrom('user', 'custom:tenant'),
  ),
  fc.array(fc.constantFrom('leaked-1', 'leaked-2', 'leaked-3'), { minLength: 1, maxLength: 2 }),
)

type Outcome = { refused: readonly string[] } | { rules: unknown }

function outcome(rule: Record<string, unknown>): Outcome {
  try {
    return { rules: parseRules([rule]) }
  } catch (e) {
    if (!(e instanceof RulesValidationError)) throw e
    return { refused: e.issues }
  }
}

const lowerCaseRepeats = (names: readonly string[]): boolean =>
  new Set(names.map((n) => n.toLowerCase())).size !== names.length

describe('names that differ only in case', () => {
  it("a match's header conditions mean the same in any order, or are refused naming both", () => {
    fc.assert(
      fc.property(headerConditions, (conditions) => {
        const rule = (list: typeof conditions) => ({
          id: 'r',
          rate: '10/1m',
          match: { headers: jsonObject(list) },
        })
        const asWritten = outcome(rule(conditions))
        const reversed = outcome(rule([...conditions].reverse()))
        if (lowerCaseRepeats(conditions.map(([n]) => n))) {
          expect(asWritten).toHaveProperty('refused')
          expect(reversed).toHaveProperty('refused')
          const issues = (asWritten as { refused: readonly string[] }).refused
          expect(issues.join('\n')).toMatch(/rules\[0\]\.match\.headers.*each header name once/)
        } else {
          expect(asWritten).toHaveProperty('rules')
          expect(reversed).toEqual(asWritten)
        }
      }),
      { numRuns: 500 },
    )
  })

  it("a deny or allow list's key parts mean the same in any order, or are refused naming both", () => {
    fc.assert(
      fc.property(listKeys, fc.constantFrom('deny', 'allow'), (keys, which) => {
        const rule = (list: typeof keys) => ({
          id: 'r',
          rate: '10/1m',
          [which]: { keys: jsonObject(list) },
        })
        const asWritten = outcome(rule(keys))
        const reversed = outcome(rule([...keys].reverse()))
        if (lowerCaseRepeats(keys.map(([n]) => n))) {
          expect(asWritten).toHaveProperty('refused')
          expect(reversed).toHaveProperty('refused')
          const issues = (asWritten as { refused: readonly string[] }).refused
          expect(issues.join('\n')).toMatch(
            new RegExp(`rules\\[0\\]\\.${which}\\.keys.*each key part once`),
          )
        } else {
          expect(asWritten).toHaveProperty('rules')
          expect(reversed).toEqual(asWritten)
        }
      }),
      { numRuns: 500 },
    )
  })

  it('names both spellings', () => {
    expect(() =>
      parseRules([
        {
          id: 'r',
          rate: '10/1m',
          match: { headers: { 'X-Plan': 'pro', 'x-plan': 'free' } },
          deny: { keys: { 'header:X-Api-Key': ['leaked-1'], 'header:x-api-key': ['leaked-2'] } },
        },
      ]),
    ).toThrow(
      expect.objectContaining({
        issues: [
          'rules[0].deny.keys["header:x-api-key"]: expected each key part once, in any case (also "header:X-Api-Key"), got "header:x-api-key"',
          'rules[0].match.headers["x-plan"]: expected each header name once, in any case (also "X-Plan"), got "x-plan"',
        ],
      }),
    )
  })
})

// Letters whose case mapping lands on ASCII: the Kelvin sign (U+212A) lower-cases to 'k', the
// long s (U+017F) and dotless i (U+0131) upper-case to 'S' and 'I'. A name checked after
// its case was changed would let one through as a different, ASCII name than the one written.
const lookAlike = fc.string({
  unit: fc.constantFrom('k', 'K', '\u212A', 's', '\u017F', 'i', '\u0131', '\u0130', 'a', '.', '-'),
  minLength: 1,
  maxLength: 12,
})
const ascii = (s: string): boolean => /^[\x20-\x7e]*$/.test(s)

describe('names changed in case by the schema', () => {
  it('are accepted only as ASCII, so changing their case never changes their letters', () => {
    const named: [string, (name: string) => Record<string, unknown>][] = [
      ['host', (n) => ({ match: { hosts: [n] } })],
      ['method', (n) => ({ match: { methods: [n], paths: '/a' } })],
      ['header', (n) => ({ match: { headers: { [n]: true } } })],
      ['key', (n) => ({ key: `header:${n}` })],
      ['list key', (n) => ({ deny: { keys: { [`header:${n}`]: ['x'] } } })],
    ]
    fc.assert(
      fc.property(lookAlike, fc.constantFrom(...named), (name, [, field]) => {
        const result = outcome({ id: 'r', rate: '10/1m', ...field(name) })
        if ('rules' in result) expect(ascii(name), JSON.stringify(name)).toBe(true)
      }),
      { numRuns: 1000 },
    )
    expect(outcome({ id: 'r', rate: '10/1m', match: { hosts: ['\u212Aey.example.com'] } })).toEqual(
      {
        refused: [
          `rules[0].match.hosts[0]: expected a host name like 'api.example.com' or '*.example.com', got "\u212Aey.example.com"`,
        ],
      },
    )
  })
})
