import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import type { Decision } from './decision.js'
import { FloodgateError, OptionsError } from './errors.js'
import { createLimiter, type LimiterOptions } from './limiter.js'
import type { RequestFacts } from './request-facts.js'
import type { RuleInput } from './rules/schema.js'
import { MemoryStore } from './stores/memory-store.js'
import type { Store } from './stores/store.js'

const facts = (over: Partial<RequestFacts> = {}): RequestFacts => ({
  method: 'GET',
  path: '/api/items',
  ip: '203.0.113.7',
  headers: {},
  ...over,
})

function clocked(rules: RuleInput[], over: Partial<LimiterOptions> = {}) {
  let now = 1_000_000
  const limiter = createLimiter({ rules, clock: () => now, ...over })
  const sync = (d: Decision | Promise<Decision>): Decision => {
    if (d instanceof Promise) throw new Error('expected a synchronous decision')
    return d
  }
  const check = (f: Partial<RequestFacts> = {}): Decision => sync(limiter.check(facts(f)))
  return { limiter, check, sync, advance: (ms: number) => (now += ms) }
}

describe('limiter.get / reset / penalty / reward', () => {
  it('penalty rejects with FG_ERR_STORE_FULL when a full MemoryStore has no room for it', async () => {
    const store = new MemoryStore({ maxKeys: 1 })
    const { limiter, check } = clocked([{ id: 'per-ip', limit: 3, window: '1m' }], { store })
    check({ ip: '198.51.100.1' })
    await expect(limiter.penalty('203.0.113.7', 10)).rejects.toMatchObject({
      code: 'FG_ERR_STORE_FULL',
    })
    // A client that has state is charged as usual.
    await limiter.penalty('198.51.100.1', 10)
    expect(check({ ip: '198.51.100.1' }).allowed).toBe(false)
  })

  it('get reads what remains without charging', async () => {
    const { limiter, check } = clocked([{ id: 'per-ip', limit: 3, window: '1s' }])
    check()
    const [state] = await limiter.get('203.0.113.7')
    expect(state).toMatchObject({ limit: 3, remaining: 2, bannedForMs: 0 })
    expect(state!.rule.id).toBe('per-ip')
    const [again] = await limiter.get({ ip: '203.0.113.7' }, { rule: 'per-ip' })
    expect(again!.remaining).toBe(2)
    // A client never seen reads as fresh.
    expect((await limiter.get('198.51.100.1'))[0]).toMatchObject({ remaining: 3, resetMs: 0 })
  })

  it('reset gives the client a fresh state', async () => {
    const { limiter, check } = clocked([{ id: 'login', limit: 2, window: '1m' }])
    check()
    check()
    expect(check().allowed).toBe(false)
    await limiter.reset('203.0.113.7', { rule: 'login' })
    expect(check()).toMatchObject({ allowed: true, remaining: 1 })
  })

  it('reset leaves the slots of requests in flight held: never more than a concurrency limit run at once', async () => {
    // Any order of requests starting, finishing and resets of the client.
    const op = fc.constantFrom('start', 'finish', 'reset')
    await fc.assert(
      fc.asyncProperty(fc.array(op, { maxLength: 40, size: 'max' }), async (ops) => {
        const { limiter, check } = clocked([
          { id: 'slots', algorithm: 'concurrency', limit: 2 },
          { id: 'per-ip', limit: 1000, window: '1m' },
        ])
        const running: Decision[] = []
        for (const o of ops) {
          if (o === 'start') {
            const d = check()
            if (d.allowed) running.push(d)
          } else if (o === 'finish') {
            const d = running.shift()
            if (d) limiter.release(d)
          } else await limiter.reset('203.0.113.7')
          expect(running.length).toBeLessThanOrEqual(2)
        }
      }),
    )
  })

  it('reset forgets the rate rules of a client that a concurrency rule also counts', async () => {
    const { limiter, check } = clocked([
      { id: 'slots', algorithm: 'concurrency', limit: 1 },
      { id: 'login', limit: 1, window: '1m' },
    ])
    const first = check()
    expect(first.allowed).toBe(true)
    limiter.release(first)
    expect(check().allowed).toBe(false)
    await limiter.reset('203.0.113.7')
    expect(check().allowed).toBe(true)
  })

  it('penalty charges past the limit; the debt is paid back at the refill rate', async () => {
    const { limiter, check, advance } = clocked([{ id: 'api', limit: 10, window: '10s' }])
    await limiter.penalty('203.0.113.7', 15)
    const refused = check()
    expect(refused.allowed).toBe(false)
    // 5 units of debt plus the 1 asked for: 6 s at 1 unit per second.
    expect(refused.retryAfterMs).toBe(6000)
    advance(6000)
    expect(check().allowed).toBe(true)
  })

  it('reward gives units back, never past a fresh state', async () => {
    const { limiter, check } = clocked([{ id: 'api', limit: 2, window: '1m' }])
    check()
    check()
    await limiter.reward('203.0.113.7', 1)
    expect(check()).toMatchObject({ allowed: true, remaining: 0 })
    await limiter.reward('203.0.113.7', 100)
    expect((await limiter.get('203.0.113.7'))[0]!.remaining).toBe(2)
  })

  it('spells a key of several parts as an object named like the rule parts', async () => {
    const { limiter, check } = clocked(
      [{ id: 'tenant-user', key: ['header:x-tenant', 'user'], limit: 2, window: '1m' }],
      { keys: { user: () => 'u1' } },
    )
    check({ headers: { 'x-tenant': 'acme' } })
    const [s] = await limiter.get({ 'header:x-tenant': 'acme', user: 'u1' })
    expect(s!.remaining).toBe(1)
    // One value cannot key a rule of two parts: the error says how to spell it.
    await expect(limiter.get('acme', { rule: 'tenant-user' })).rejects.toThrow(
      /header:x-tenant \+ user.*'header:x-tenant': …, 'user': …/,
    )
  })

  it('reaches the IP fallback of a rule keyed by user', async () => {
    const { limiter, check } = clocked([{ id: 'per-user', key: 'user', limit: 2, window: '1m' }], {
      keys: { user: () => undefined },
    })
    check()
    expect((await limiter.get({ ip: '203.0.113.7' }, { rule: 'per-user' }))[0]!.remaining).toBe(1)
    await limiter.reset({ ip: '203.0.113.7' })
    expect((await limiter.get({ ip: '203.0.113.7' }))[0]!.remaining).toBe(2)
  })

  it('groups an IPv6 client by its subnet, as a request would', async () => {
    const { limiter, check } = clocked([{ id: 'per-ip', limit: 5, window: '1m' }])
    check({ ip: '2001:db8::1' })
    expect((await limiter.get('2001:db8::ffff'))[0]!.remaining).toBe(4)
  })

  it('refuses bad calls with errors naming what is wrong', async () => {
    const { limiter } = clocked([
      { id: 'win', algorithm: 'fixed-window', limit: 2, window: '1m' },
      { id: 'slots', algorithm: 'concurrency', limit: 2 },
    ])
    await expect(limiter.get('1.2.3.4', { rule: 'nope' })).rejects.toThrow(
      /get: no rule with id "nope" is in force/,
    )
    await expect(limiter.reset({ user: 'u1' })).rejects.toThrow(
      /reset: no rule in force is keyed by/,
    )
    await expect(limiter.penalty('1.2.3.4', 1, { rule: 'win' })).rejects.toThrow(
      /rule "win" \(fixed-window\) cannot be charged past its limit/,
    )
    await expect(limiter.penalty('1.2.3.4', -1)).rejects.toThrow(
      /penalty: units: expected a positive/,
    )
    await expect(limiter.reward('1.2.3.4', 1, { rule: 'slots' })).rejects.toThrow(/release\(\)/)
    await expect(limiter.get(null as never)).rejects.toBeInstanceOf(OptionsError)
  })

  it('names the store and the operation when the store cannot do it', async () => {
    const memory = new MemoryStore()
    const bare: Store = {
      consume: (e, now) => memory.consume(e, now),
      refund: (e, now) => memory.refund(e, now),
    }
    const limiter = createLimiter({ rules: [{ id: 'a', limit: 1, window: '1s' }], store: bare })
    await expect(limiter.reset('1.2.3.4')).rejects.toThrow(/reset: this store cannot reset\(\)/)
    await expect(limiter.get('1.2.3.4')).rejects.toThrow(/cannot peek\(\)/)
    await expect(limiter.penalty('1.2.3.4', 1)).rejects.toThrow(/cannot penalize\(\)/)
  })
})

describe('limiter.limit', () => {
  it('decides an event against one rule by id, with a cost', () => {
    const { limiter, sync } = clocked([
      { id: 'ws-messages', match: false, limit: 10, window: '1s' },
    ])
    expect(sync(limiter.limit('u1', { rule: 'ws-messages', cost: 4 }))).toMatchObject({
      allowed: true,
      remaining: 6,
    })
    expect(sync(limiter.limit('u1', { rule: 'ws-messages', cost: 7 }))).toMatchObject({
      allowed: false,
      remaining: 6,
    })
    expect(sync(limiter.limit('u1', { rule: 'ws-messages' })).remaining).toBe(5)
    expect(limiter.counters().byRule.get('ws-messages')).toMatchObject({ allowed: 2, rejected: 1 })
  })

  it('counts an event under the tier the key names, and reset forgets it', async () => {
    const { limiter, sync } = clocked(
      [
        {
          id: 'ws-plan',
          match: false,
          key: 'user',
          window: '1m',
          tiers: {
            by: 'custom:plan',
            values: { free: { limit: 1 }, pro: { limit: 3 } },
            default: 'free',
          },
        },
      ],
      { keys: { user: () => undefined, plan: () => undefined } },
    )
    const pro = { user: 'u1', 'custom:plan': 'pro' }
    expect(sync(limiter.limit(pro, { rule: 'ws-plan' }))).toMatchObject({ limit: 3, remaining: 2 })
    // Without the plan: the default tier.
    expect(sync(limiter.limit('u1', { rule: 'ws-plan' }))).toMatchObject({ limit: 1, remaining: 0 })
    expect((await limiter.get(pro))[0]).toMatchObject({ tier: 'pro', remaining: 2 })
    await limiter.reset('u1')
    expect(sync(limiter.limit(pro, { rule: 'ws-plan' })).remaining).toBe(2)
    expect(sync(limiter.limit('u1', { rule: 'ws-plan' })).allowed).toBe(true)
  })

  it('refuses an unknown rule, a bad key and a bad cost', () => {
    const { limiter } = clocked([{ id: 'jobs', key: 'custom:queue', limit: 1, window: '1s' }], {
      keys: { queue: () => 'q' },
    })
    expect(() => limiter.limit('q', { rule: 'nope' })).toThrow(/no rule with id "nope"/)
    expect(() => limiter.limit({}, { rule: 'jobs' })).toThrow(/does not key rule "jobs"/)
    expect(() => limiter.limit('q', { rule: 'jobs', cost: Number.NaN })).toThrow(/limit: cost/)
    expect(() => limiter.limit('q', undefined as never)).toThrow(/limit: options/)
  })
})

describe('a rule with match: false beside an HTTP rule', () => {
  const rules: RuleInput[] = [
    { id: 'http', limit: 5, window: '1s' },
    { id: 'events', match: false, limit: 2, window: '1s' },
  ]

  it('counts no request, whatever its path, and limit() counts events under it alone', async () => {
    const { limiter, check, sync } = clocked(rules)
    for (const path of ['/never', '/', '/api/items', '/events']) {
      const d = check({ path, route: path })
      expect(d.outcomes.map((o) => o.rule.id)).toEqual(['http'])
    }
    expect((await limiter.get('203.0.113.7', { rule: 'events' }))[0]!.remaining).toBe(2)
    expect(sync(limiter.limit('203.0.113.7', { rule: 'events' }))).toMatchObject({
      allowed: true,
      remaining: 1,
    })
    expect(sync(limiter.limit('203.0.113.7', { rule: 'events' })).allowed).toBe(true)
    expect(sync(limiter.limit('203.0.113.7', { rule: 'events' })).allowed).toBe(false)
    // The events did not touch the HTTP rule: one request left of five.
    expect(check().remaining).toBe(0)
    expect((await limiter.get('203.0.113.7', { rule: 'http' }))[0]!.remaining).toBe(0)
  })

  it('get, penalty, reward and reset work on it as on any rule', async () => {
    const { limiter, sync } = clocked(rules)
    await limiter.penalty('u1', 2, { rule: 'events' })
    expect((await limiter.get('u1', { rule: 'events' }))[0]!.remaining).toBe(0)
    expect(sync(limiter.limit('u1', { rule: 'events' })).allowed).toBe(false)
    await limiter.reward('u1', 1, { rule: 'events' })
    expect(sync(limiter.limit('u1', { rule: 'events' })).allowed).toBe(true)
    await limiter.reset('u1', { rule: 'events' })
    expect((await limiter.get('u1', { rule: 'events' }))[0]!.remaining).toBe(2)
    // Without a rule, the client-state calls reach every rule, this one included.
    expect((await limiter.get('u1')).map((s) => s.rule.id)).toEqual(['http', 'events'])
  })

  it('is matched by no request as a route rule either, and limit() finds it by id', () => {
    const { limiter, check, sync } = clocked([{ id: 'http', limit: 5, window: '1s' }])
    const routeRules = limiter.compileRules([
      { id: 'route-events', match: false, limit: 1, window: '1s' },
    ])
    const d = check({ path: '/ws', route: '/ws', routeRules })
    expect(d.outcomes.map((o) => o.rule.id)).toEqual(['http'])
    expect(sync(limiter.limit('u1', { rule: 'route-events' })).allowed).toBe(true)
    expect(sync(limiter.limit('u1', { rule: 'route-events' })).allowed).toBe(false)
  })
})

describe('limiter.get on a store that answers garbage', () => {
  it('rejects with FG_ERR_STORE_ANSWER_INVALID, never a TypeError from reading it (property)', async () => {
    // A proxy or server that is not Redis, a broken link: RedisStore's peek resolves what it
    // could not decode as no results at all.
    const garbage = fc.oneof(
      fc.constant(undefined),
      fc.constant(null),
      fc.array(fc.constant(undefined), { maxLength: 3 }),
      fc.array(fc.constant(null), { maxLength: 3 }),
      fc.array(fc.record({ allowed: fc.boolean(), limit: fc.constant(Number.NaN) }), {
        maxLength: 3,
      }),
    )
    await fc.assert(
      fc.asyncProperty(garbage, fc.boolean(), async (answer, banned) => {
        const memory = new MemoryStore()
        const store: Store = {
          consume: (entries, nowMs) => memory.consume(entries, nowMs),
          refund: (entries, nowMs) => memory.refund(entries, nowMs),
          peek: () => Promise.resolve(answer as never),
          reset: (entries) => memory.reset(entries),
          penalize: (entries, nowMs) => memory.penalize(entries, nowMs),
        }
        const rule: RuleInput = { id: 'r', limit: 5, window: '1m' }
        const limiter = createLimiter({
          store,
          rules: [banned ? { ...rule, ban: { after: 2, within: '1m', for: '1h' } } : rule],
        })
        const err: unknown = await limiter.get('203.0.113.7').then(
          () => undefined,
          (e: unknown) => e,
        )
        expect(err).toBeInstanceOf(FloodgateError)
        expect((err as FloodgateError).code).toBe('FG_ERR_STORE_ANSWER_INVALID')
      }),
      { numRuns: 200 },
    )
  })
})
