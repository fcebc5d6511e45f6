import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { createLimiter } from '../limiter.js'
import type { RequestFacts } from '../request-facts.js'
import { parseRules } from '../rules/schema.js'
import { compileKey, keyFromParts } from './build-key.js'

/**
 * A client named by hand (`limiter.get`, `reset`, `penalty`, `reward`, `limit`) as an object
 * of part values, `{ 'header:X-Api-Key': 'k1', ip }`, is the client whose requests carry those
 * values, whatever the case of a header part's name: header names are case-insensitive, and a
 * rule may write `header:X-Api-Key` (the schema keeps it as `header:x-api-key`). The model: the
 * key the request with those values gets.
 */

const headerName = fc
  .array(fc.boolean(), { minLength: 9, maxLength: 9 })
  .map((upper) => [...'x-api-key'].map((c, i) => (upper[i] ? c.toUpperCase() : c)).join(''))

const setup = fc.record({
  ruleName: headerName,
  givenName: headerName,
  parts: fc.constantFrom<readonly string[]>(
    ['header'],
    ['header', 'ip'],
    ['user', 'header'],
    ['header', 'user', 'ip'],
  ),
  apiKey: fc.constantFrom('k1', 'K1', 'a\u001fb', 'x'.repeat(200)),
  user: fc.constantFrom('u1', 'u2'),
  fallbackKey: fc.constantFrom('ip', 'skip', 'shared'),
})

type Setup = typeof setup extends fc.Arbitrary<infer T> ? T : never

const IP = '203.0.113.7'

function ruleOf(s: Setup) {
  const key = s.parts.map((p) => (p === 'header' ? `header:${s.ruleName}` : p))
  return parseRules([{ id: 'r', key, fallbackKey: s.fallbackKey, limit: 2, window: '1m' }])[0]!
}

function givenOf(s: Setup): Record<string, string> {
  const given: Record<string, string> = { [`header:${s.givenName}`]: s.apiKey, ip: IP }
  if (s.parts.includes('user')) given.user = s.user
  return given
}

function requestOf(s: Setup): RequestFacts<{ user: string }> {
  return {
    method: 'GET',
    path: '/',
    ip: IP,
    headers: { 'x-api-key': s.apiKey },
    request: { user: s.user },
  }
}

const builders = { user: (req: { user: string }) => req.user }

describe('a header part named by hand in any case', () => {
  it('keys the client its requests key (model: the request with those values)', () => {
    fc.assert(
      fc.property(setup, (s) => {
        const rule = ruleOf(s)
        const want = compileKey(rule, builders, 64)(requestOf(s))
        expect(keyFromParts(rule, givenOf(s), 64)).toBe(want)
      }),
      { numRuns: 300 },
    )
  })

  it('limiter.reset({ "header:X-Api-Key": … }) frees the client (it reset the IP fallback and left it limited)', async () => {
    const limiter = createLimiter({
      rules: [{ id: 'r', limit: 2, window: '1m', key: ['header:X-Api-Key', 'ip'] }],
      clock: () => 1_000_000,
    })
    const facts: RequestFacts = { method: 'GET', path: '/', headers: { 'x-api-key': 'k1' }, ip: IP }
    await limiter.check(facts)
    await limiter.check(facts)
    expect((await limiter.check(facts)).allowed).toBe(false)
    const [state] = await limiter.get({ 'header:X-Api-Key': 'k1', ip: IP })
    expect(state!.remaining).toBe(0)
    await limiter.reset({ 'header:X-Api-Key': 'k1', ip: IP })
    expect((await limiter.check(facts)).allowed).toBe(true)
    await limiter.close()
  })

  it('one part given in two spellings with two values keys no client', () => {
    const rule = parseRules([{ id: 'r', key: 'header:x-api-key', limit: 2, window: '1m' }])[0]!
    expect(
      keyFromParts(rule, { 'header:X-Api-Key': 'k1', 'header:x-api-key': 'k2', ip: IP }, 64),
    ).toBeUndefined()
    expect(keyFromParts(rule, { 'header:X-Api-Key': 'k1', 'header:x-api-key': 'k1' }, 64)).toBe(
      'k1',
    )
  })
})
