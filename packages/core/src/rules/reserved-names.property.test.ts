import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import type { HeaderBag, RequestFacts } from '../request-facts.js'
import { compileKey } from '../keys/build-key.js'
import { compileRules } from './compile-rules.js'
import type { RuleMatch } from './rule.js'
import { parseRules } from './schema.js'

// Names that are properties of every plain object, plus ordinary ones.
const SPECIAL = ['__proto__', 'constructor', 'toString', 'hasOwnProperty', 'valueOf']
const name = fc.oneof(fc.constantFrom(...SPECIAL), fc.constantFrom('x-a', 'x-b', 'x-tier'))
// Request headers arrive with lower-case names; `__proto__` and `constructor` stay members.
const headerName = name.map((n) => n.toLowerCase())
const value = fc.constantFrom('v', 'w', '')

// A JSON object written as text, the way a rules file or a rules service delivers it: a
// `__proto__` member becomes an own property of the parsed object.
const jsonObject = (entries: readonly (readonly [string, unknown])[]): Record<string, unknown> =>
  JSON.parse(
    `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${JSON.stringify(v)}`).join(',')}}`,
  ) as Record<string, unknown>

const uniqueEntries = <T>(v: fc.Arbitrary<T>, names = name) =>
  fc.uniqueArray(fc.tuple(names, v), { selector: ([k]) => k, maxLength: 4 })

// A request's header bag: own headers, over a prototype that carries other names.
const headerBag = fc
  .tuple(uniqueEntries(value, headerName), uniqueEntries(value, headerName))
  .map(([own, inherited]): HeaderBag => {
    const bag = jsonObject(own)
    Object.setPrototypeOf(bag, jsonObject(inherited))
    return bag as HeaderBag
  })

const facts = (headers: HeaderBag): RequestFacts => ({
  method: 'GET',
  path: '/',
  ip: '203.0.113.9',
  headers,
  request: {},
})

describe('user-supplied names that are also Object.prototype members', () => {
  it('header conditions are kept exactly and match only own headers of the request', () => {
    const condition = fc.oneof(fc.constant(true as const), fc.constantFrom('v', 'w'))
    fc.assert(
      fc.property(uniqueEntries(condition), headerBag, (conditions, headers) => {
        const [rule] = parseRules([
          { id: 'r', limit: 1, window: '1s', match: { headers: jsonObject(conditions) } },
        ])
        const kept = Object.entries((rule!.match as RuleMatch).headers ?? {}).sort()
        const lower = conditions.map(([n, v]) => [n.toLowerCase(), v] as const)
        expect(kept).toEqual([...lower].sort())
        const own = (n: string) => (Object.hasOwn(headers, n) ? headers[n] : undefined)
        const expected = lower.every(([n, want]) =>
          want === true ? own(n) !== undefined : own(n) === want,
        )
        const matched = compileRules([rule!]).match(facts(headers)).length === 1
        expect(matched).toBe(expected)
      }),
      { numRuns: 1000 },
    )
  })

  it('header key parts read own headers only, falling back when the header is absent', () => {
    fc.assert(
      fc.property(name, headerBag, (n, headers) => {
        const [rule] = parseRules([{ id: 'r', limit: 1, window: '1s', key: [`header:${n}`] }])
        const h = n.toLowerCase()
        const own = Object.hasOwn(headers, h) ? headers[h] : undefined
        const key = compileKey(rule!, {}, 64)(facts(headers))
        expect(key).toBe(own ? own : '\u0000ip:203.0.113.9')
      }),
      { numRuns: 500 },
    )
  })

  it('key builders are found by own name only; an inherited one is refused by name', () => {
    fc.assert(
      fc.property(name, fc.boolean(), (n, registered) => {
        const builders: Record<string, () => string> = Object.create(null) as Record<
          string,
          () => string
        >
        if (registered) builders[n] = () => 'k'
        const [rule] = parseRules([{ id: 'r', limit: 1, window: '1s', key: [`custom:${n}`] }])
        const compile = () => compileKey(rule!, { ...builders }, 64)
        if (registered) expect(compile()(facts({}))).toBe('k')
        else expect(compile).toThrow(`needs a key builder registered as keys.${n}`)
      }),
      { numRuns: 200 },
    )
  })

  it('a rule document with such a field is refused, never half-read', () => {
    fc.assert(
      fc.property(fc.constantFrom(...SPECIAL), (field) => {
        const doc = jsonObject([
          ['id', 'r'],
          ['limit', 1],
          ['window', '1s'],
          [field, { match: '/x' }],
        ])
        expect(() => parseRules([doc])).toThrow(/rules\[0\]/)
      }),
    )
  })
})
