import { describe, expect, it } from 'vitest'
import { RulesValidationError } from '../errors.js'
import type { HeaderBag, RequestFacts } from '../request-facts.js'
import { compileRules, stateIdOf } from './compile-rules.js'
import type { Rule } from './rule.js'
import { parseRules, type RuleInput } from './schema.js'

function compile(...rules: RuleInput[]) {
  return compileRules(parseRules(rules))
}

function facts(method: string, path: string, extra: Partial<RequestFacts> = {}): RequestFacts {
  return { method, path, ip: '10.0.0.1', headers: {}, ...extra }
}

function ids(compiled: ReturnType<typeof compile>, f: RequestFacts): string[] {
  return compiled.match(f).map((c) => c.rule.id)
}

const w = { limit: 10, window: '1s' } as const

describe('compileRules', () => {
  it('resolves algorithm, params and stateId', () => {
    const { rules } = compile(
      { id: 'a', ...w, burst: 20 },
      { id: 'b', ...w, algorithm: 'sliding-window-counter' },
      { id: 'c', algorithm: 'concurrency', limit: 3 },
    )
    expect(rules.map((r) => [r.algorithm.name, r.params, r.stateId])).toEqual([
      ['token-bucket', { limit: 10, windowMs: 1000, burst: 20 }, 'a|token-bucket|10|1000|20'],
      [
        'sliding-window-counter',
        { limit: 10, windowMs: 1000, burst: 10 },
        'b|sliding-window-counter|10|1000|10',
      ],
      ['concurrency', { limit: 3, windowMs: 0, burst: 3 }, 'c|concurrency|3|0|3'],
    ])
  })

  it('keeps the stateId of a rule whose state-relevant fields did not change', () => {
    const [before] = parseRules([{ id: 'a', ...w, match: '/x', description: 'old' }])
    const [after] = parseRules([{ id: 'a', ...w, match: '/y', cost: 2, shadow: true }])
    const [changed] = parseRules([{ id: 'a', limit: 11, window: '1s' }])
    expect(stateIdOf(after!)).toBe(stateIdOf(before!))
    expect(stateIdOf(changed!)).not.toBe(stateIdOf(before!))
  })

  it('refuses duplicate ids even when handed unvalidated rules', () => {
    const [r] = parseRules([{ id: 'a', ...w }])
    expect(() => compileRules([r!, r!])).toThrow(RulesValidationError)
    expect(() => compileRules([r!, r!])).toThrow(
      /rules\[1\]\.id: duplicate id "a" \(also rules\[0\]\)/,
    )
  })

  it('refuses an algorithm the build does not have', () => {
    const [r] = parseRules([{ id: 'a', ...w }])
    const bad = { ...r!, algorithm: 'nope' } as unknown as Rule
    expect(() => compileRules([bad])).toThrow(
      /rules\[0\]\.algorithm: expected an algorithm this build provides, got "nope"/,
    )
  })
})

describe('match', () => {
  it('applies a rule without conditions to everything, sharing one frozen array', () => {
    const c = compile({ id: 'all', ...w })
    const a = c.match(facts('GET', '/a'))
    const b = c.match(facts('DELETE', '/b/c'))
    expect(a.map((r) => r.rule.id)).toEqual(['all'])
    expect(b).toBe(a)
    expect(Object.isFrozen(a)).toBe(true)
  })

  it('returns an empty frozen array when nothing applies', () => {
    const c = compile({ id: 'x', ...w, match: '/x' })
    const r = c.match(facts('GET', '/y'))
    expect(r).toEqual([])
    expect(Object.isFrozen(r)).toBe(true)
  })

  it('filters by method, GET covering HEAD', () => {
    const c = compile(
      { id: 'post', ...w, match: 'POST /export' },
      { id: 'get', ...w, match: 'GET /export' },
      { id: 'any', ...w, match: '/export' },
    )
    expect(ids(c, facts('POST', '/export'))).toEqual(['post', 'any'])
    expect(ids(c, facts('GET', '/export'))).toEqual(['get', 'any'])
    expect(ids(c, facts('HEAD', '/export'))).toEqual(['get', 'any'])
    expect(ids(c, facts('PURGE', '/export'))).toEqual(['any'])
    expect(ids(c, facts('POST', '/import'))).toEqual([])
  })

  it('keeps declaration order across literal, pattern and unconditional rules', () => {
    const c = compile(
      { id: 'p', ...w, match: '/users/:id' },
      { id: 'all', ...w },
      { id: 'lit', ...w, match: '/users/me' },
      { id: 'rest', ...w, match: '/users/**' },
    )
    expect(ids(c, facts('GET', '/users/me'))).toEqual(['p', 'all', 'lit', 'rest'])
    expect(ids(c, facts('GET', '/users/42'))).toEqual(['p', 'all', 'rest'])
    expect(ids(c, facts('GET', '/users'))).toEqual(['all', 'rest'])
    expect(ids(c, facts('GET', '/users/1/posts'))).toEqual(['all', 'rest'])
  })

  it.each([
    ['/users/:id', '/users/42', true],
    ['/users/:id', '/users/42/posts', false],
    ['/users/:id', '/users', false],
    ['/users/*/posts', '/users/42/posts', true],
    ['/users/*/posts', '/users/42/comments', false],
    ['/api/**', '/api', true],
    ['/api/**', '/api/', true],
    ['/api/**', '/api/v1/users/42', true],
    ['/api/**', '/apis', false],
    ['/**', '/', true],
    ['/**', '/anything/at/all', true],
    ['/', '/', true],
    ['/', '/a', false],
    ['/a/', '/a', true],
    ['/a', '/a/', true],
    ['/a', '/a?x=1', true],
    ['/a', '/a#frag', true],
    ['/a/b', '/a//b', true],
    ['/Login', '/login', true],
    ['/login', '/LOGIN', true],
    ['/v1/models/x:generate', '/v1/models/x:generate', true],
  ])('pattern %s on path %s: %s', (pattern, path, expected) => {
    const c = compile({ id: 'r', ...w, match: pattern })
    expect(ids(c, facts('GET', path))).toEqual(expected ? ['r'] : [])
  })

  it('matches a rule against the route pattern and against the concrete path', () => {
    const c = compile(
      { id: 'param', ...w, match: '/users/:id' },
      { id: 'me', ...w, match: '/users/me' },
      { id: 'star', ...w, match: '/users/*' },
    )
    const route = '/users/:id'
    expect(ids(c, facts('GET', '/users/42', { route }))).toEqual(['param', 'star'])
    expect(ids(c, facts('GET', '/users/me', { route }))).toEqual(['param', 'me', 'star'])
    // Without a route, the path alone decides.
    expect(ids(c, facts('GET', '/users/42'))).toEqual(['param', 'star'])
  })

  it('matches framework route syntax it does not parse by falling back to the path', () => {
    const c = compile(
      { id: 'files', ...w, match: '/files/**' },
      { id: 'png', ...w, match: '/files/a.png' },
    )
    expect(ids(c, facts('GET', '/files/a.png', { route: '/files/*' }))).toEqual(['files', 'png'])
    expect(ids(c, facts('GET', '/files/a.png', { route: '/files/*splat' }))).toEqual([
      'files',
      'png',
    ])
    expect(ids(c, facts('GET', '/files/a.png', { route: '/files{/:name}' }))).toEqual([
      'files',
      'png',
    ])
    expect(ids(c, facts('GET', '/files/b.png', { route: '/files/:name(\\w+).png' }))).toEqual([
      'files',
    ])
  })

  it('caches per route: the same frozen array for every path of a route', () => {
    const c = compile({ id: 'u', ...w, match: '/users/:id' }, { id: 'x', ...w, match: '/x' })
    const a = c.match(facts('GET', '/users/1', { route: '/users/:id' }))
    const b = c.match(facts('GET', '/users/2', { route: '/users/:id' }))
    expect(b).toBe(a)
    expect(c.cachedPaths).toBe(0)
  })

  it('matches host conditions: exact, wildcard sub-domains, case and port', () => {
    const c = compile(
      { id: 'exact', ...w, match: { hosts: 'api.example.com' } },
      { id: 'sub', ...w, match: { hosts: '*.example.com' } },
    )
    expect(ids(c, facts('GET', '/', { host: 'api.example.com' }))).toEqual(['exact', 'sub'])
    expect(ids(c, facts('GET', '/', { host: 'www.example.com' }))).toEqual(['sub'])
    expect(ids(c, facts('GET', '/', { host: 'a.b.example.com' }))).toEqual(['sub'])
    expect(ids(c, facts('GET', '/', { host: 'example.com' }))).toEqual([])
    expect(ids(c, facts('GET', '/', { host: 'badexample.com' }))).toEqual([])
    expect(ids(c, facts('GET', '/', { host: 'API.Example.COM:8443' }))).toEqual(['exact', 'sub'])
    expect(ids(c, facts('GET', '/'))).toEqual([])
  })

  it('matches header conditions: equality, presence, repeated headers, inherited names', () => {
    const c = compile(
      { id: 'free', ...w, match: { headers: { 'x-tier': 'free' } } },
      { id: 'keyed', ...w, match: { headers: { 'X-Api-Key': true } } },
      { id: 'ctor', ...w, match: { headers: { constructor: true as const } } },
    )
    const h = (headers: HeaderBag) => ids(c, facts('GET', '/', { headers }))
    expect(h({ 'x-tier': 'free' })).toEqual(['free'])
    expect(h({ 'x-tier': 'paid' })).toEqual([])
    expect(h({ 'x-tier': ['paid', 'free'] })).toEqual(['free'])
    expect(h({ 'x-api-key': '' })).toEqual(['keyed'])
    expect(h({ 'x-api-key': 'k', 'x-tier': 'free' })).toEqual(['free', 'keyed'])
    expect(h({ 'x-api-key': undefined })).toEqual([])
    expect(h({})).toEqual([])
  })

  it('returns one frozen array per combination of header and host conditions', () => {
    const c = compile(
      { id: 'k', ...w, match: { paths: '/a', headers: { 'x-k': true } } },
      { id: 'all', ...w },
    )
    const withKey = c.match(facts('GET', '/a', { headers: { 'x-k': '1' } }))
    expect(withKey.map((r) => r.rule.id)).toEqual(['k', 'all'])
    expect(c.match(facts('GET', '/a', { headers: { 'x-k': '2' } }))).toBe(withKey)
    const without = c.match(facts('GET', '/a'))
    expect(without.map((r) => r.rule.id)).toEqual(['all'])
    expect(c.match(facts('GET', '/a', { headers: {} }))).toBe(without)
    expect(Object.isFrozen(withKey) && Object.isFrozen(without)).toBe(true)
  })

  it('handles more conditional rules than it caches variants for', () => {
    const rules = Array.from({ length: 9 }, (_, i) => ({
      id: `h${i}`,
      ...w,
      match: { headers: { [`x-${i}`]: true as const } },
    }))
    const c = compile(...rules)
    expect(ids(c, facts('GET', '/', { headers: { 'x-1': 'a', 'x-8': 'b' } }))).toEqual(['h1', 'h8'])
    expect(ids(c, facts('GET', '/', { headers: {} }))).toEqual([])
  })

  it('keeps the raw-path cache bounded under 100k random paths', () => {
    const rules = parseRules([
      { id: 'p', ...w, match: '/users/:id' },
      { id: 'q', ...w, match: 'POST /api/**' },
    ])
    const c = compileRules(rules, { pathCacheSize: 1000 })
    let matched = 0
    let peak = 0
    for (let i = 0; i < 100_000; i++) {
      const path = `/users/${Math.random().toString(36).slice(2)}`
      matched += c.match(facts(i % 2 ? 'GET' : 'POST', path)).length
      peak = Math.max(peak, c.cachedPaths)
    }
    expect(matched).toBe(100_000)
    // Two methods, each with its own table of at most 1000 paths.
    expect(peak).toBeLessThanOrEqual(2000)
    expect(peak).toBeGreaterThan(1000)
  })

  it('keeps working with random methods from clients', () => {
    const c = compile({ id: 'get', ...w, match: 'GET /a' }, { id: 'any', ...w, match: '/a' })
    for (let i = 0; i < 1000; i++) {
      expect(ids(c, facts(`M${i}`, '/a'))).toEqual(['any'])
    }
  })
})
