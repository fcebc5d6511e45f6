import fc from 'fast-check'
import { posix } from 'node:path'
import { describe, expect, it } from 'vitest'
import type { RequestFacts } from '../request-facts.js'
import { compileRules } from './compile-rules.js'
import type { Rule } from './rule.js'
import { parseRules, type RuleInput } from './schema.js'

// A deliberately plain reference: split, filter, recurse. It shares no code with the matcher.
function refSegments(path: string): string[] {
  return path
    .split(/[?#]/)[0]!
    .split('/')
    .filter((s) => s.length > 0)
    .map((s) => s.toLowerCase())
}

function refPatternMatches(pattern: string, path: string): boolean {
  const p = refSegments(pattern)
  const s = refSegments(path)
  const go = (i: number, j: number): boolean => {
    if (i === p.length) return j === s.length
    if (p[i] === '**') return true
    if (j === s.length) return false
    if (p[i] === '*' || p[i]!.startsWith(':') || p[i] === s[j]) return go(i + 1, j + 1)
    return false
  }
  return go(0, 0)
}

function refMatches(rule: Rule, f: RequestFacts): boolean {
  const m = rule.match
  if (m === false) return false
  if (m.methods) {
    const methods = m.methods.includes('GET') ? [...m.methods, 'HEAD'] : m.methods
    if (!methods.includes(f.method)) return false
  }
  if (m.paths) {
    const hit = m.paths.some(
      (p) =>
        refPatternMatches(p, f.path) || (f.route !== undefined && refPatternMatches(p, f.route)),
    )
    if (!hit) return false
  }
  for (const [name, want] of Object.entries(m.headers ?? {})) {
    const got = f.headers[name]
    if (got === undefined) return false
    if (want !== true && !(Array.isArray(got) ? got.includes(want) : got === want)) return false
  }
  if (m.hosts) {
    const host = f.host
    if (host === undefined) return false
    const ok = m.hosts.some((h) =>
      h.startsWith('*.') ? host.endsWith(h.slice(1)) && host.length > h.length - 1 : host === h,
    )
    if (!ok) return false
  }
  return true
}

const words = ['a', 'b', 'users', 'B', '42']
const literal = fc.constantFrom(...words)
const patternSegment = fc.oneof(
  { weight: 4, arbitrary: literal },
  { weight: 1, arbitrary: fc.constant(':id') },
  { weight: 1, arbitrary: fc.constant('*') },
)
const pattern = fc
  .tuple(fc.array(patternSegment, { maxLength: 4 }), fc.boolean(), fc.boolean())
  .map(([segs, rest, slash]) => {
    const all = rest ? [...segs, '**'] : segs
    const p = `/${all.join('/')}`
    return slash && p !== '/' ? `${p}/` : p
  })

const ruleInput: fc.Arbitrary<Omit<RuleInput, 'id'>> = fc
  .record(
    {
      methods: fc.subarray(['GET', 'POST', 'DELETE'], { minLength: 1 }),
      paths: fc.array(pattern, { minLength: 1, maxLength: 3 }),
      headers: fc.dictionary(
        fc.constantFrom('x-a', 'x-b'),
        fc.oneof(fc.constant(true as const), fc.constantFrom('1', '2')),
      ),
      hosts: fc.array(fc.constantFrom('api.example.com', '*.example.com', 'other.org'), {
        minLength: 1,
        maxLength: 2,
      }),
    },
    { requiredKeys: [] },
  )
  .map((match) => ({ match, limit: 5, window: '1s' }))

// A rule used through limiter.limit() only.
const eventRule: fc.Arbitrary<Omit<RuleInput, 'id'>> = fc.record({
  match: fc.constant(false as const),
  limit: fc.integer({ min: 1, max: 9 }),
  window: fc.constant('1s'),
})
const anyRule = fc.oneof({ weight: 4, arbitrary: ruleInput }, { weight: 1, arbitrary: eventRule })

// A concrete path: segments, with sometimes a doubled slash, a trailing slash or a query.
const path = fc
  .tuple(
    fc.array(fc.constantFrom(...words, 'c', 'USERS'), { maxLength: 5 }),
    fc.constantFrom('', '/', '?q=1', '#f'),
    fc.boolean(),
  )
  .map(([segs, tail, dbl]) => `/${segs.join(dbl ? '//' : '/')}${tail}`)

// A route and a concrete path that is an instance of it (what a framework would report).
const routed = fc
  .array(fc.oneof(literal, fc.constant(':id'), fc.constant('*')), { maxLength: 4 })
  .chain((segs) =>
    fc.tuple(
      fc.constant(`/${segs.join('/')}`),
      fc
        .tuple(
          ...segs.map((s) =>
            s === ':id'
              ? fc.constantFrom(...words, 'me')
              : s === '*'
                ? fc.array(literal, { maxLength: 2 }).map((x) => x.join('/') || 'z')
                : fc.constant(s),
          ),
        )
        .map((parts) => `/${parts.join('/')}`),
    ),
  )

const headers: fc.Arbitrary<Record<string, string | string[]>> = fc.dictionary(
  fc.constantFrom('x-a', 'x-b', 'x-c'),
  fc.oneof(
    fc.constantFrom('1', '2'),
    fc.constant(['2', '1']).map((x) => [...x]),
  ),
)
const host = fc.option(
  fc.constantFrom('api.example.com', 'www.example.com', 'example.com', 'other.org'),
  { nil: undefined },
)
const method = fc.constantFrom('GET', 'HEAD', 'POST', 'DELETE', 'PUT')

const request: fc.Arbitrary<RequestFacts> = fc.oneof(
  fc.record({ method, path, headers, host }).map((r) => ({ ...r, ip: '1.1.1.1' })),
  fc
    .record({ method, routed, headers, host })
    .map(({ routed: [route, p], ...r }) => ({ ...r, route, path: p, ip: '1.1.1.1' })),
)

describe('RuleMatcher equals a naive reference matcher', () => {
  it('on random rules and requests', () => {
    fc.assert(
      fc.property(
        fc.array(anyRule, { maxLength: 8 }),
        fc.array(request, { minLength: 1, maxLength: 20 }),
        (inputs, requests) => {
          const rules = parseRules(inputs.map((r, i) => ({ ...r, id: `r${i}` })))
          // A tiny cache also exercises the clearing path.
          const compiled = compileRules(rules, { pathCacheSize: 3, routeCacheSize: 2 })
          for (const f of [...requests, ...requests]) {
            const got = compiled.match(f).map((c) => c.rule.id)
            const want = rules.filter((r) => refMatches(r, f)).map((r) => r.id)
            expect(got).toEqual(want)
          }
        },
      ),
      { numRuns: 300 },
    )
  })
})

describe('a rule with match: false', () => {
  it('is never matched, and adding such rules anywhere never changes which others match', () => {
    fc.assert(
      fc.property(
        fc.array(ruleInput, { maxLength: 6 }),
        fc.array(fc.tuple(fc.nat(), eventRule), { minLength: 1, maxLength: 3 }),
        fc.array(request, { minLength: 1, maxLength: 15 }),
        (inputs, inserted, requests) => {
          const http = inputs.map((r, i) => ({ ...r, id: `r${i}` }))
          const mixed: RuleInput[] = [...http]
          inserted.forEach(([at, r], i) =>
            mixed.splice(at % (mixed.length + 1), 0, { ...r, id: `e${i}` }),
          )
          const without = compileRules(parseRules(http), { pathCacheSize: 2, routeCacheSize: 2 })
          const withEvents = compileRules(parseRules(mixed), {
            pathCacheSize: 2,
            routeCacheSize: 2,
          })
          for (const f of [...requests, ...requests]) {
            const got = withEvents.match(f).map((c) => c.rule.id)
            expect(got.some((id) => id.startsWith('e'))).toBe(false)
            expect(got).toEqual(without.match(f).map((c) => c.rule.id))
          }
        },
      ),
      { numRuns: 300 },
    )
  })

  it('alone in a set, no request matches it', () => {
    fc.assert(
      fc.property(eventRule, request, (r, f) => {
        expect(compileRules(parseRules([{ ...r, id: 'e' }])).match(f)).toEqual([])
      }),
    )
  })
})

// How a file server reads a request path: Express's express.static and koa-send decode it
// whole (an encoded slash too) and resolve dot segments (`path.normalize`); a WHATWG URL
// resolves dot segments (also `%2E`) and keeps `%2F`. Undefined: the server refuses the path.
function fileServerReadings(target: string): string[] {
  const pathname = target.split(/[?#]/)[0]!
  const out: string[] = []
  let decoded: string | undefined
  try {
    decoded = decodeURIComponent(pathname)
  } catch {
    decoded = undefined
  }
  if (decoded !== undefined) {
    const normalized = posix.normalize(`./${decoded}`)
    if (!normalized.startsWith('..')) out.push(`/${normalized}`)
  }
  out.push(new URL(`http://h${pathname}`).pathname)
  return out
}

describe('a rule on a path applies to every spelling a file server reads as that path', () => {
  const rules = parseRules([
    { id: 'files', match: '/files/**', limit: 5, window: '1m' },
    { id: 'secret', match: 'GET /files/secret.txt', limit: 5, window: '1m' },
    { id: 'user', match: '/users/:id/avatar', limit: 5, window: '1m' },
  ])
  const segment = fc.constantFrom('files', 'FILES', 'secret.txt', 'x', 'users', '42', 'avatar')
  const dot = fc.constantFrom('.', '..', '%2e', '%2E%2e', '.%2E', '')
  const target = fc.array(fc.oneof(segment, dot), { minLength: 1, maxLength: 7 }).chain((segs) =>
    fc
      .array(fc.constantFrom('/', '/', '%2F', '%2f', '//'), {
        minLength: segs.length - 1,
        maxLength: segs.length - 1,
      })
      .map((seps) => '/' + segs.map((s, i) => (i === 0 ? s : seps[i - 1]! + s)).join('')),
  )

  it('for any dot segments and encoded slashes', () => {
    fc.assert(
      fc.property(target, fc.constantFrom('', '?a=1'), (path, query) => {
        const compiled = compileRules(rules, { pathCacheSize: 4 })
        const facts: RequestFacts = {
          method: 'GET',
          path: path + query,
          ip: '1.1.1.1',
          headers: {},
        }
        const got = compiled.match(facts).map((c) => c.rule.id)
        for (const read of fileServerReadings(path)) {
          const want = rules.filter((r) => refMatches(r, { ...facts, path: read })).map((r) => r.id)
          for (const id of want) expect(got, `${path} read as ${read}`).toContain(id)
        }
        // The path as the router reads it still meets its rules.
        for (const r of rules) if (refMatches(r, facts)) expect(got).toContain(r.id)
      }),
      { numRuns: 1000 },
    )
  })

  it('as express.static reads /x/../files/secret.txt, /./files/secret.txt and /files%2Fsecret.txt', () => {
    const compiled = compileRules(rules)
    const ids = (path: string) =>
      compiled.match({ method: 'GET', path, headers: {} }).map((c) => c.rule.id)
    for (const path of [
      '/files/secret.txt',
      '/x/../files/secret.txt',
      '/./files/secret.txt',
      '/x/%2e%2e/files/secret.txt',
      '/files%2Fsecret.txt',
      '/x%2F..%2Ffiles%2fsecret.txt',
      '/a%2Fb/../files/secret.txt',
    ]) {
      expect(ids(path), path).toEqual(['files', 'secret'])
    }
    // Not a spelling of it: a path that stays outside /files whichever way it is read.
    expect(ids('/x/files/secret.txt')).toEqual([])
    expect(ids('/files%252Fsecret.txt')).toEqual([])
  })
})

describe('a known route never hides a rule that matches the concrete path', () => {
  // Route segments in the frameworks' own syntaxes, each with the path segments a request it
  // serves may have there. `?` and `#` in a route are syntax (an optional parameter, a lazy
  // quantifier), not a query string or a fragment. Fastify gives a parameter an empty value
  // (`/users//posts` reaches `/users/:id/posts`), which the path reads as no segment at all.
  const routeSegment = fc.constantFrom<readonly [string, fc.Arbitrary<string[]>]>(
    ['users', fc.constant(['users'])],
    ['a', fc.constant(['a'])],
    [':id', fc.constantFrom(['a'], ['42'], ['users'], [''])],
    [':n(^\\d+)', fc.constantFrom(['42'], ['7'])],
    [':y(^\\d{4}?)', fc.constant(['2024'])],
    ['ab?cd', fc.constantFrom(['acd'], ['abcd'])],
    ['#x', fc.constant(['#x'])],
  )
  // The last segment may also be optional or a wildcard, as Fastify and Express 4 write them.
  const lastSegment = fc.constantFrom<readonly [string, fc.Arbitrary<string[]>]>(
    [':id?', fc.constantFrom([], ['a'], ['42'])],
    ['*', fc.constantFrom([], ['a'], ['a', '42'])],
  )
  const routed = fc
    .tuple(fc.array(routeSegment, { maxLength: 3 }), fc.option(lastSegment, { nil: undefined }))
    .chain(([segs, last]) => {
      const all = last ? [...segs, last] : segs
      return fc.tuple(...all.map(([, instance]) => instance)).map((parts) => ({
        route: `/${all.map(([s]) => s).join('/')}`,
        path: `/${parts.flat().map(encodeURIComponent).join('/')}`,
      }))
    })
  const rulePattern = fc
    .array(fc.constantFrom('users', 'a', '42', '2024', 'acd', 'abcd', '%23x', ':id', '*'), {
      maxLength: 4,
    })
    .chain((segs) => fc.constantFrom(`/${segs.join('/')}`, `/${[...segs, '**'].join('/')}`))

  it('for any route pattern and a path it serves', () => {
    fc.assert(
      fc.property(
        fc.array(rulePattern, { minLength: 1, maxLength: 6 }),
        routed,
        (patterns, { route, path }) => {
          // The path itself, as a literal rule, beside the random ones.
          const own = `/${path.split('/').filter(Boolean).join('/')}`
          const rules = parseRules(
            [...patterns, own].map((p, i) => ({ id: `r${i}`, match: p, limit: 5, window: '1s' })),
          )
          const compiled = compileRules(rules)
          const facts: RequestFacts = { method: 'GET', path, ip: '1.1.1.1', headers: {} }
          const byPath = compiled.match(facts).map((c) => c.rule.id)
          const byRoute = compiled.match({ ...facts, route }).map((c) => c.rule.id)
          for (const id of byPath) expect(byRoute, `${route} serving ${path}`).toContain(id)
        },
      ),
      { numRuns: 1000 },
    )
  })
})
