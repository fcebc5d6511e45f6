import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { canonicalPath } from './canonical-path.js'
import { compileRules } from './compile-rules.js'
import { RuleMatcher } from './rule-matcher.js'
import { parseRules } from './schema.js'

const UNRESERVED = 'ABCXYZabcmxyz0189-._~'.split('')
// Printable characters a path segment holds as they are. Every framework hands a parameter the
// same value for `@me` and `%40me`, and Fastify routes `/a%21b` to `/a!b`: sent either way they
// are one character, so a literal rule on `/users/@me` cannot be stepped around with `%40`.
const PRINTABLE = ':@!$&\'()*+,;="<>[]\\^`{|}'.split('')
// Characters that keep their meaning only while encoded: decoding them would change the path.
const STRUCTURAL = ['/', '?', '#', '%']

const hex = (c: string): string => c.charCodeAt(0).toString(16).padStart(2, '0')

/** One character as a client may spell it: as is, or percent-encoded in either hex case. */
const spelling = (c: string): fc.Arbitrary<string> =>
  fc.constantFrom(c, `%${hex(c).toUpperCase()}`, `%${hex(c).toLowerCase()}`)

const segment = fc
  .array(fc.constantFrom(...UNRESERVED, ...PRINTABLE), { minLength: 1, maxLength: 6 })
  .map((cs) => cs.join(''))
const path = fc.array(segment, { minLength: 0, maxLength: 4 }).map((ss) => '/' + ss.join('/'))

/** A random spelling of `p` that every framework treats as the same resource. */
function spell(p: string): fc.Arbitrary<string> {
  return fc
    .tuple(
      fc.tuple(...p.split('').map((c) => (c === '/' ? fc.constant('/') : spelling(c)))),
      fc.constantFrom('', 'http://x', 'https://api.example.com:8443', 'HTTP://X'),
      fc.constantFrom('', '?', '?a=1', '?a=%2F/..', '#f'),
    )
    .map(([chars, origin, query]) => {
      const body = chars.join('')
      return origin + (origin !== '' && body === '/' && query === '' ? '' : body) + query
    })
}

describe('canonicalPath', () => {
  it('maps every spelling of a path of printable characters to that path', () => {
    fc.assert(
      fc.property(
        path.chain((p) => fc.tuple(fc.constant(p), spell(p))),
        ([p, spelled]) => {
          expect(canonicalPath(spelled)).toBe(p)
        },
      ),
      { numRuns: 2000 },
    )
  })

  it('keeps `/ ? # %` encoded, in upper-case hex, so no segment splits', () => {
    fc.assert(
      fc.property(fc.constantFrom(...STRUCTURAL), fc.boolean(), (c, upper) => {
        const h = upper ? hex(c).toUpperCase() : hex(c).toLowerCase()
        expect(canonicalPath(`/a%${h}b`)).toBe(`/a%${hex(c).toUpperCase()}b`)
      }),
    )
  })

  it('is idempotent, and keeps a path a path, whatever the input', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'binary', maxLength: 40 }), (s) => {
        const once = canonicalPath(s)
        expect(canonicalPath(once)).toBe(once)
        expect(once.startsWith('/') || !s.startsWith('/')).toBe(true)
      }),
      { numRuns: 3000 },
    )
  })

  it('returns an already-canonical path as the same string', () => {
    const p = '/users/42/orders'
    expect(canonicalPath(p)).toBe(p)
  })

  it.each([
    ['http://x/login', '/login'],
    ['http://x', '/'],
    ['http://x?a=1', '/'],
    ['', '/'],
    ['/users/%6De', '/users/me'],
    ['/users/a%2fb', '/users/a%2Fb'],
    ['/users/%40me', '/users/@me'],
    ['/items%3abatch', '/items:batch'],
    ['/a%20b%7F', '/a%20b%7F'],
    ['/caf%c3%a9', '/caf%C3%A9'],
    ['/café', '/caf%C3%A9'],
    ['/a b', '/a%20b'],
    ['/100%', '/100%25'],
    ['/%zz', '/%25zz'],
    ['/%2E%2E/login', '/../login'],
    ['//login/', '//login/'],
    ['/LOGIN', '/LOGIN'],
    ['*', '*'],
  ])('%s is %s', (input, want) => {
    expect(canonicalPath(input)).toBe(want)
  })
})

describe('rules and spellings', () => {
  const rules = compileRules(
    parseRules([
      { id: 'login', match: 'POST /login', limit: 5, window: '1m' },
      { id: 'me', match: '/users/me', limit: 5, window: '1m' },
      { id: 'cafe', match: '/café', limit: 5, window: '1m' },
      { id: 'slash', match: '/a%2Fb', limit: 5, window: '1m' },
      { id: 'handle', match: "/users/@me!$&'()+,;=:", limit: 5, window: '1m' },
      { id: 'colon', match: '/files/%3Aname/%2A', limit: 5, window: '1m' },
    ]),
  )
  const ids = (method: string, path: string, route?: string): string[] =>
    new RuleMatcher(rules.rules).match({ method, path, route, headers: {} }).map((r) => r.rule.id)

  it('applies a literal rule to every spelling of its path, with or without a route', () => {
    fc.assert(
      fc.property(
        fc
          .constantFrom(
            ['POST', '/login', undefined, 'login'] as const,
            ['GET', '/users/me', '/users/:id', 'me'] as const,
            ['GET', '/users/me', undefined, 'me'] as const,
            ['GET', "/users/@me!$&'()+,;=:", '/users/:id', 'handle'] as const,
            ['GET', "/users/@me!$&'()+,;=:", undefined, 'handle'] as const,
          )
          .chain((c) => fc.tuple(fc.constant(c), spell(c[1]))),
        ([[method, , route, id], spelled]) => {
          expect(ids(method, spelled, route)).toEqual([id])
        },
      ),
      { numRuns: 600 },
    )
  })

  it('matches non-ASCII and encoded-slash literals in one spelling', () => {
    expect(ids('GET', '/caf%c3%a9')).toEqual(['cafe'])
    expect(ids('GET', '/café')).toEqual(['cafe'])
    expect(ids('GET', '/a%2fb')).toEqual(['slash'])
    expect(ids('GET', '/a/b')).toEqual([])
  })

  it('reads an encoded `:` or `*` in a pattern as a literal character, never a wildcard', () => {
    expect(ids('GET', '/files/:name/*')).toEqual(['colon'])
    expect(ids('GET', '/files/%3Aname/%2a')).toEqual(['colon'])
    expect(ids('GET', '/files/a/b')).toEqual([])
  })
})
