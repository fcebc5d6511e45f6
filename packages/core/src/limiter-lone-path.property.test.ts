import fc from 'fast-check'
import { describe, expect, it, vi } from 'vitest'
import { createLimiter } from './limiter.js'
import type { Decision } from './decision.js'
import type { RequestFacts } from './request-facts.js'
import type { RuleInput } from './rules/schema.js'

/**
 * A request that one rule with nothing but a limit decides takes the limiter's short path
 * (`judgeLone`). The general path must give the same decisions, field for field, and leave the
 * same counters, whatever the rules, the requests and the clock.
 */

const ALGORITHMS = [
  'fixed-window',
  'sliding-window-counter',
  'token-bucket',
  'concurrency',
] as const

const rule = (i: number): fc.Arbitrary<RuleInput> =>
  fc
    .record({
      algorithm: fc.constantFrom(...ALGORITHMS),
      limit: fc.integer({ min: 3, max: 6 }),
      window: fc.integer({ min: 1, max: 5_000 }),
      cost: fc.oneof(fc.integer({ min: 1, max: 3 }), fc.constant(0.5)),
      shadow: fc.boolean(),
      key: fc.constantFrom<RuleInput['key']>('ip', ['ip'], 'header:x-user', [
        'ip',
        'header:x-user',
      ]),
      fallbackKey: fc.constantFrom('ip', 'skip', 'shared'),
      onLimit: fc.constantFrom<RuleInput['onLimit']>(
        'reject',
        'drop',
        { action: 'reject', status: 503 },
        // Not for the short path: the general path takes these, in both limiters.
        { action: 'queue', maxWait: 50 },
      ),
      count: fc.constantFrom<RuleInput['count']>('all', 'all', 'all', 'failed'),
      methods: fc.constantFrom<string[] | undefined>(undefined, ['GET'], ['POST']),
      allow: fc.constantFrom<RuleInput['allow']>(undefined, { ips: ['10.0.0.9'] }),
    })
    .map(({ methods, allow, ...r }) => ({
      id: `r${i}`,
      ...r,
      // A concurrency slot is given back whatever the outcome.
      count: r.algorithm === 'concurrency' ? 'all' : r.count,
      // Only the fixed window and the token bucket reserve capacity ahead, so only they queue.
      onLimit:
        typeof r.onLimit === 'object' &&
        r.onLimit.action === 'queue' &&
        r.algorithm !== 'fixed-window' &&
        r.algorithm !== 'token-bucket'
          ? 'reject'
          : r.onLimit,
      ...(methods ? { match: { methods } } : {}),
      ...(allow ? { allow } : {}),
    }))

const rules = fc
  .integer({ min: 1, max: 3 })
  .chain((n) => fc.tuple(...Array.from({ length: n }, (_, i) => rule(i))))

const request = fc.record({
  method: fc.constantFrom('GET', 'POST'),
  ip: fc.constantFrom(
    '10.0.0.1',
    '10.0.0.2',
    '10.0.0.9',
    '2001:db8::1',
    '010.0.0.1',
    'nonsense',
    '',
  ),
  user: fc.constantFrom(undefined, 'u1', 'u2'),
  cost: fc.constantFrom(undefined, 0, 1, 2, 2.5, -1, Infinity, Number.MAX_VALUE),
  stepMs: fc.oneof(fc.integer({ min: 0, max: 2_000 }), fc.constant(-500)),
})

type Req = typeof request extends fc.Arbitrary<infer T> ? T : never

function factsOf(r: Req): RequestFacts {
  return {
    method: r.method,
    path: '/api/items',
    ip: r.ip,
    headers: r.user === undefined ? {} : { 'x-user': r.user },
    ...(r.cost === undefined ? {} : { cost: r.cost }),
  }
}

const fieldsOf = (d: Decision): Record<string, unknown> => Object.fromEntries(Object.entries(d))

describe('the short path of a request one plain rule decides', () => {
  it('decides as the general path, field for field, with the same counters', () => {
    // size 'max': at fast-check's default size an array of maxLength 40 holds about ten requests.
    const requests = fc.array(request, { minLength: 1, maxLength: 40, size: 'max' })
    fc.assert(
      fc.property(rules, requests, (rs, reqs) => {
        let now = 1_000_000
        const clock = (): number => now
        const silent = { debug() {}, info() {}, warn() {}, error() {} }
        const short = createLimiter({ rules: rs, clock, logger: silent })
        const general = createLimiter({ rules: rs, clock, logger: silent })
        ;(general as unknown as { lonePath: boolean }).lonePath = false
        for (const r of reqs) {
          now += r.stepMs
          const a = short.check(factsOf(r)) as Decision
          const b = general.check(factsOf(r)) as Decision
          expect(a).not.toBeInstanceOf(Promise)
          // Each limiter keys a held slot's lease by its own symbol: compare the fields, and
          // that both hold one or neither does.
          expect(fieldsOf(a)).toEqual(fieldsOf(b))
          expect(Object.getOwnPropertySymbols(a).length).toBe(
            Object.getOwnPropertySymbols(b).length,
          )
          // Concurrency slots and counted outcomes are given back alike.
          short.release(a, 'succeeded')
          general.release(b, 'succeeded')
        }
        expect(short.counters()).toEqual(general.counters())
      }),
      { numRuns: 300 },
    )
  })
})

describe('which requests take the short path', () => {
  const facts: RequestFacts = { method: 'GET', path: '/', ip: '10.0.0.1', headers: {} }
  const taken = (rs: RuleInput[]): boolean => {
    const limiter = createLimiter({ rules: rs })
    const spy = vi.spyOn(limiter as unknown as { judgeLone: () => unknown }, 'judgeLone')
    // Synchronous: every rule here decides on MemoryStore.
    const decision = limiter.check(facts) as Decision
    expect(decision.allowed).toBe(true)
    return spy.mock.calls.length === 1
  }

  it('one rule with nothing but a limit, shadow or not', () => {
    expect(taken([{ id: 'a', limit: 5, window: 1000 }])).toBe(true)
    expect(taken([{ id: 'a', limit: 5, window: 1000, shadow: true, onLimit: 'drop' }])).toBe(true)
  })

  it('not two rules, a queue, a list, a ban, tiers, concurrency or counted outcomes', () => {
    const a = { id: 'a', limit: 5, window: 1000 }
    expect(taken([a, { ...a, id: 'b' }])).toBe(false)
    expect(taken([{ ...a, onLimit: { action: 'queue', maxWait: 50 } }])).toBe(false)
    expect(taken([{ ...a, allow: { ips: ['10.0.0.9'] } }])).toBe(false)
    expect(taken([{ ...a, deny: { ips: ['10.0.0.9'] } }])).toBe(false)
    expect(taken([{ ...a, ban: { after: 3, within: '1m', for: '15m' } }])).toBe(false)
    expect(taken([{ ...a, algorithm: 'concurrency' }])).toBe(false)
    expect(taken([{ ...a, count: 'failed' }])).toBe(false)
  })
})
