import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import type { RequestFacts } from '../request-facts.js'
import type { Rule } from '../rules/rule.js'
import { compileKey, keyFromParts } from './build-key.js'
import { MAX_KEY_LENGTH } from './hash-key.js'

const rule = (key: Rule['key'], fallbackKey: Rule['fallbackKey'] = 'ip'): Rule => ({
  id: 'r',
  match: {},
  key,
  fallbackKey,
  algorithm: 'token-bucket',
  limit: 1,
  windowMs: 1000,
  burst: 1,
  cost: 1,
  onLimit: { action: 'reject', status: 429 },
  shadow: false,
  count: 'all',
})

const facts = (
  over: Partial<RequestFacts<{ user?: string }>> = {},
): RequestFacts<{ user?: string }> => ({
  method: 'GET',
  path: '/',
  ip: '203.0.113.9',
  headers: {},
  request: {},
  ...over,
})

const builders = { user: (req: { user?: string }) => req.user, tenant: () => 'acme' }

describe('compileKey', () => {
  it('builds ip, header, user and custom keys', () => {
    expect(compileKey(rule(['ip']), builders, 64)(facts())).toBe('203.0.113.9')
    expect(
      compileKey(
        rule(['header:x-api-key']),
        builders,
        64,
      )(facts({ headers: { 'x-api-key': 'k1' } })),
    ).toBe('k1')
    expect(compileKey(rule(['user']), builders, 64)(facts({ request: { user: 'bob' } }))).toBe(
      'bob',
    )
    expect(compileKey(rule(['custom:tenant']), builders, 64)(facts())).toBe('acme')
  })

  it('joins composite keys so that different tuples never collide', () => {
    const fn = compileKey(rule(['header:a', 'header:b']), builders, 64)
    const k1 = fn(facts({ headers: { a: 'x\u001fy', b: 'z' } }))
    const k2 = fn(facts({ headers: { a: 'x', b: 'y\u001fz' } }))
    expect(k1).not.toBe(k2)
  })

  it('follows the fallback when a key is missing, never undefined as a key', () => {
    const anon = facts({ request: {} })
    expect(compileKey(rule(['user'], 'ip'), builders, 64)(anon)).toBe('\u0000ip:203.0.113.9')
    expect(compileKey(rule(['user'], 'skip'), builders, 64)(anon)).toBeUndefined()
    expect(compileKey(rule(['user'], 'shared'), builders, 64)(anon)).toBe('\u0000shared')
    expect(compileKey(rule(['user'], 'ip'), builders, 64)(facts({ ip: undefined }))).toBe(
      '\u0000shared',
    )
  })

  it('property: a builder answering no value (NaN and infinities included) falls back as undefined does', () => {
    // `Number(req.headers['x-user-id'])` is NaN for every anonymous client: keyed "NaN", they
    // would all share one bucket.
    const noValue = fc.constantFrom<unknown>(undefined, null, '', NaN, Infinity, -Infinity)
    fc.assert(
      fc.property(
        noValue,
        fc.constantFrom<Rule['fallbackKey']>('ip', 'skip', 'shared'),
        fc.ipV4(),
        fc.constantFrom<Rule['key']>(['user'], ['user', 'ip'], ['ip', 'user']),
        (answer, fallback, ip, key) => {
          const answering = { user: () => answer as number }
          const got = compileKey(rule(key, fallback), answering, 64)(facts({ ip }))
          const want = compileKey(rule(key, fallback), { user: () => undefined }, 64)(facts({ ip }))
          expect(got).toBe(want)
          // A client given by hand with that value is that fallback client too.
          const given = { user: answer as number, ip }
          expect(keyFromParts(rule(key, fallback), given, 64)).toBe(
            keyFromParts(rule(key, fallback), { ip }, 64),
          )
        },
      ),
    )
  })

  it('hashes long keys to a bounded length', () => {
    const fn = compileKey(rule(['header:x']), builders, 64)
    const long = fn(facts({ headers: { x: 'a'.repeat(10_000) } }))!
    expect(long.length).toBeLessThanOrEqual(MAX_KEY_LENGTH)
    expect(long).not.toBe(fn(facts({ headers: { x: 'b'.repeat(10_000) } })))
  })

  it('refuses a rule naming a builder that is not registered, and ignores inherited names', () => {
    expect(() => compileKey(rule(['custom:nope']), builders, 64, 'rules[3]')).toThrow(
      /rules\[3\]\.key: key "custom:nope" needs a key builder registered as keys\.nope/,
    )
    expect(() => compileKey(rule(['custom:toString']), builders, 64)).toThrow(
      /FG_ERR_KEY_BUILDER_UNKNOWN/,
    )
    expect(() => compileKey(rule(['user']), {}, 64)).toThrow(/keys\.user/)
  })
})
