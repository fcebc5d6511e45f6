import fc from 'fast-check'
import { describe, expect, it, vi } from 'vitest'
import type { Decision } from './decision.js'
import { RulesValidationError } from './errors.js'
import { createLimiter } from './limiter.js'
import type { RequestFacts } from './request-facts.js'
import { banStatesOf } from './rules/ban-states.js'
import { parseRules, type RuleInput } from './rules/schema.js'
import { MemoryStore } from './stores/memory-store.js'
import type { Store } from './stores/store.js'

const facts = (ip = '203.0.113.7'): RequestFacts => ({ method: 'GET', path: '/', ip, headers: {} })

function clocked(rules: RuleInput[], store: Store = new MemoryStore()) {
  let now = 1_000_000
  const limiter = createLimiter({ rules, clock: () => now, store })
  const check = (ip?: string): Decision => {
    const d = limiter.check(facts(ip))
    if (d instanceof Promise) throw new Error('expected a synchronous decision')
    return d
  }
  return { limiter, check, advance: (ms: number) => (now += ms), at: () => now }
}

const LOGIN: RuleInput = {
  id: 'login',
  limit: 2,
  window: '1s',
  algorithm: 'fixed-window',
  ban: { after: 3, within: '1m', for: '15m' },
}

describe('ban: the penalty box', () => {
  const rule = LOGIN

  it('bans after N refusals within the period, for the block duration', () => {
    const { check, advance } = clocked([rule])
    check()
    check()
    expect(check()).toMatchObject({ allowed: false, retryAfterMs: 1000 })
    expect(check().banned).toBeUndefined()
    // The third refusal starts the ban and already says so.
    const third = check()
    expect(third).toMatchObject({ allowed: false, status: 429, banned: true })
    expect(third.retryAfterMs).toBe(15 * 60_000)
    expect(third.outcomes[0]!.banned).toBe(true)
    // Long after the window refilled, the client is still banned; Retry-After counts down.
    advance(60_000)
    const banned = check()
    expect(banned).toMatchObject({ allowed: false, banned: true, remaining: 0 })
    expect(banned.retryAfterMs).toBe(14 * 60_000)
    advance(14 * 60_000 - 1)
    expect(check().retryAfterMs).toBe(1)
    advance(1)
    expect(check()).toMatchObject({ allowed: true })
  })

  it('bans one client, not the others', () => {
    const { check } = clocked([rule])
    for (let i = 0; i < 5; i++) check('198.51.100.1')
    expect(check('198.51.100.1').banned).toBe(true)
    expect(check('198.51.100.2').allowed).toBe(true)
  })

  it('counts refusals in a sliding period', () => {
    const { check, advance } = clocked([rule])
    check()
    check()
    check() // refusal 1
    advance(59_000)
    check()
    check()
    check() // refusal 2
    advance(2_000) // refusal 1 is out of the minute
    check()
    check()
    expect(check().banned).toBeUndefined() // refusal 2 and this one: two in the minute
  })

  it('a banned request charges nothing; reset lifts the ban', async () => {
    const { limiter, check } = clocked([rule])
    for (let i = 0; i < 5; i++) check()
    expect(check().banned).toBe(true)
    const [state] = await limiter.get('203.0.113.7')
    expect(state!.bannedForMs).toBe(15 * 60_000)
    await limiter.reset('203.0.113.7')
    expect(check()).toMatchObject({ allowed: true, remaining: 1 })
  })

  it('a shadow rule never bans', () => {
    const { check } = clocked([{ ...rule, shadow: true }])
    for (let i = 0; i < 10; i++) expect(check().allowed).toBe(true)
  })

  it('counts only the refusals of the banning rule', () => {
    const { check } = clocked([
      { id: 'strict', limit: 1, window: '1m', algorithm: 'fixed-window' },
      { ...rule, limit: 100 },
    ])
    for (let i = 0; i < 10; i++) expect(check().banned).toBeUndefined()
  })

  it('refuses bad ban fields with errors naming them', () => {
    const bad = (ban: unknown): string => {
      try {
        parseRules([{ id: 'x', limit: 1, window: '1s', ban } as RuleInput])
      } catch (err) {
        return (err as Error).message
      }
      return 'no error'
    }
    expect(bad({ after: 0, within: '1m', for: '1m' })).toMatch(
      /rules\[0\]\.ban\.after: expected a whole number of refusals from 1 to 1000, got 0/,
    )
    expect(bad({ after: 2, within: 'soon', for: '1m' })).toMatch(
      /rules\[0\]\.ban\.within: expected a duration/,
    )
    expect(bad({ after: 2, within: '1m' })).toMatch(/rules\[0\]\.ban\.for: expected a duration/)
    expect(bad({ after: 2, within: '1m', for: '1m', forever: true })).toMatch(/forever/)
    expect(bad('5m')).toMatch(/rules\[0\]\.ban: expected an object like \{ after: 5/)
  })

  it('refuses at startup a ban on a store that cannot keep one, naming it', () => {
    const memory = new MemoryStore()
    class CountOnlyStore implements Store {
      consume: Store['consume'] = (e, now) => memory.consume(e, now)
      refund: Store['refund'] = (e, now) => memory.refund(e, now)
    }
    expect(() => createLimiter({ rules: [rule], store: new CountOnlyStore() })).toThrow(
      RulesValidationError,
    )
    expect(() => createLimiter({ rules: [rule], store: new CountOnlyStore() })).toThrow(
      /rule "login": ban needs a store that can reset\(\) and penalize\(\); CountOnlyStore cannot/,
    )
  })
})

/**
 * The reference: a fixed window of `limit` per `windowMs`, a list of refusal times, and a
 * ban end. A refusal counts while it is less than `withinMs` old; the refusal that makes
 * `after` of them (or finds `after` already) bans until `forMs` later.
 */
class BanModel {
  private windowStart = -1
  private count = 0
  private refusals: number[] = []
  private bannedUntil = -Infinity

  constructor(
    private readonly limit: number,
    private readonly windowMs: number,
    private readonly after: number,
    private readonly withinMs: number,
    private readonly forMs: number,
  ) {}

  request(now: number): { allowed: boolean; banned: boolean; retryAfterMs: number } {
    const start = Math.floor(now / this.windowMs) * this.windowMs
    if (start !== this.windowStart) {
      this.windowStart = start
      this.count = 0
    }
    // When the same request could pass: once the window has room again.
    const windowRetry = this.count < this.limit ? 0 : start + this.windowMs - now
    if (now < this.bannedUntil) {
      const retryAfterMs = Math.max(this.bannedUntil - now, windowRetry)
      return { allowed: false, banned: true, retryAfterMs }
    }
    if (this.count < this.limit) {
      this.count++
      return { allowed: true, banned: false, retryAfterMs: 0 }
    }
    this.refusals = this.refusals.filter((t) => now - t < this.withinMs)
    if (this.refusals.length < this.after) this.refusals.push(now)
    if (this.refusals.length >= this.after) {
      this.bannedUntil = now + this.forMs
      return { allowed: false, banned: true, retryAfterMs: Math.max(this.forMs, windowRetry) }
    }
    return { allowed: false, banned: false, retryAfterMs: windowRetry }
  }
}

describe('ban: property against a reference model', () => {
  it('bans exactly when the model does, for as long', () => {
    fc.assert(
      fc.property(
        fc.record({
          limit: fc.integer({ min: 1, max: 3 }),
          windowMs: fc.integer({ min: 10, max: 1000 }),
          after: fc.integer({ min: 1, max: 4 }),
          withinMs: fc.integer({ min: 10, max: 5000 }),
          forMs: fc.integer({ min: 1, max: 5000 }),
        }),
        fc.array(fc.integer({ min: 0, max: 700 }), { minLength: 1, maxLength: 80, size: 'max' }),
        (p, gaps) => {
          let now = 0
          const limiter = createLimiter({
            rules: [
              {
                id: 'r',
                algorithm: 'fixed-window',
                limit: p.limit,
                window: p.windowMs,
                ban: { after: p.after, within: p.withinMs, for: p.forMs },
              },
            ],
            clock: () => now,
          })
          const model = new BanModel(p.limit, p.windowMs, p.after, p.withinMs, p.forMs)
          for (const [i, gap] of gaps.entries()) {
            now += gap
            const d = limiter.check(facts()) as Decision
            const want = model.request(now)
            const got = {
              allowed: d.allowed,
              banned: d.banned === true,
              retryAfterMs: d.retryAfterMs,
            }
            expect(got, `request ${i} at ${now}`).toEqual(want)
          }
        },
      ),
      { numRuns: 200 },
    )
  })
})

describe('ban under a full MemoryStore', () => {
  const login: RuleInput = { ...LOGIN, window: '1m' }
  // Four keys: client A's window state, then three other clients' windows fill the store.
  function full() {
    const store = new MemoryStore({ maxKeys: 4 })
    const t = clocked([login], store)
    return { store, ...t }
  }

  it('a new client refused because the store is full is not labeled banned', () => {
    const { store, check } = full()
    for (let i = 1; i <= 4; i++) expect(check(`198.51.100.${i}`).allowed).toBe(true)
    const d = check('198.51.100.9')
    expect(store.overflowed).toBe(1)
    expect(d).toMatchObject({ allowed: false, retryAfterMs: 1000 })
    expect(d.banned).toBeUndefined()
  })

  it('a client with state and room left is decided as usual when the store is full', () => {
    const { check } = full()
    expect(check('198.51.100.1')).toMatchObject({ allowed: true, remaining: 1 })
    for (let i = 2; i <= 9; i++) check(`198.51.100.${i}`)
    expect(check('198.51.100.1')).toMatchObject({ allowed: true, remaining: 0 })
  })

  it('a refusal the full store cannot count does not start a ban', () => {
    const { check } = full()
    check('198.51.100.1')
    check('198.51.100.1')
    for (let i = 2; i <= 9; i++) check(`198.51.100.${i}`)
    // Refused by its window; its refusal count has no room: a plain refusal, twice.
    for (let i = 0; i < 2; i++) {
      const d = check('198.51.100.1')
      // The fixed window ends 20 s on (its windows start at multiples of a minute).
      expect(d).toMatchObject({ allowed: false, retryAfterMs: 20_000 })
      expect(d.banned).toBeUndefined()
    }
  })

  it("a ban the full store has no room for takes the room of the client's count: announced, in force, and its refusals count afresh after it", () => {
    let now = 1_000_000
    const warn = vi.fn()
    const store = new MemoryStore({ maxKeys: 3 })
    const limiter = createLimiter({
      rules: [{ ...login, ban: { after: 2, within: '1h', for: '15m' } }],
      clock: () => now,
      store,
      logger: { debug: vi.fn(), info: vi.fn(), warn, error: vi.fn() },
    })
    const check = (ip: string): Decision => limiter.check(facts(ip)) as Decision
    check('198.51.100.1')
    check('198.51.100.1')
    expect(check('198.51.100.1').banned).toBeUndefined() // refusal 1: window + count, two keys
    check('198.51.100.2') // the third key: full of state that is not fresh
    // Refusal 2 earns the ban; the block state has no room of its own and takes the count's.
    expect(check('198.51.100.1')).toMatchObject({
      allowed: false,
      banned: true,
      retryAfterMs: 15 * 60_000,
    })
    now += 5 * 60_000
    expect(check('198.51.100.1')).toMatchObject({
      allowed: false,
      banned: true,
      retryAfterMs: 10 * 60_000,
    })
    expect(store.size).toBeLessThanOrEqual(3)
    expect(warn).not.toHaveBeenCalled()
    // Within the hour of `within`, but the count gave its room: one refusal does not ban again.
    now += 10 * 60_000
    expect(check('198.51.100.1').allowed).toBe(true)
    expect(check('198.51.100.1').allowed).toBe(true)
    expect(check('198.51.100.1').banned).toBeUndefined()
    expect(check('198.51.100.1').banned).toBe(true)
  })

  it('every ban it announces is in force, none comes before `after` refusals, and a client whose count is recorded is banned by the refusal that completes it (property)', async () => {
    const step = fc.oneof(
      fc.record({
        t: fc.constant('request' as const),
        client: fc.nat(3),
        times: fc.integer({ min: 1, max: 4 }),
      }),
      fc.record({
        t: fc.constant('flood' as const),
        keys: fc.integer({ min: 1, max: 6 }),
        each: fc.integer({ min: 1, max: 6 }),
      }),
      fc.record({ t: fc.constant('tick' as const), ms: fc.integer({ min: 0, max: 1500 }) }),
    )
    await fc.assert(
      fc.asyncProperty(
        fc.record({
          limit: fc.integer({ min: 1, max: 3 }),
          windowMs: fc.constantFrom(100, 1000, 5000),
          after: fc.integer({ min: 1, max: 4 }),
          withinMs: fc.constantFrom(500, 2000, 10_000),
          forMs: fc.constantFrom(300, 3000, 20_000),
        }),
        fc.integer({ min: 1, max: 8 }),
        fc.array(step, { minLength: 1, maxLength: 60, size: 'max' }),
        async (p, maxKeys, steps) => {
          const store = new MemoryStore({ maxKeys })
          const { limiter, check, advance, at } = clocked(
            [
              {
                id: 'r',
                algorithm: 'fixed-window',
                limit: p.limit,
                window: p.windowMs,
                ban: { after: p.after, within: p.withinMs, for: p.forMs },
              },
            ],
            store,
          )
          const refusalsState = banStatesOf(limiter.rules[0]!)!.refusals
          const refused = new Map<string, number[]>()
          const bannedUntil = new Map<string, number>()
          const request = async (ip: string): Promise<void> => {
            const now = at()
            // What the store holds before the request (read without changing anything): the
            // rule's own state, the ban, and the refusals counted within `within`.
            const [own] = await limiter.get(ip)
            const [count] = store.peek([{ rule: refusalsState, key: own!.key }], now)
            const counted = p.after - count!.remaining
            const d = check(ip)
            const until = bannedUntil.get(ip) ?? -Infinity
            if (now < until) {
              expect(d, `${ip} at ${now}, banned until ${until}`).toMatchObject({
                allowed: false,
                banned: true,
              })
            }
            // Refused by its own exhausted state (so not for want of room), with a count on
            // record that this refusal completes: the count has room, and so has the ban.
            if (own!.bannedForMs === 0 && own!.remaining === 0 && counted >= 1) {
              if (counted + 1 >= p.after) {
                expect(d, `${ip} at ${now}: refusal ${counted + 1} of ${p.after}`).toMatchObject({
                  allowed: false,
                  banned: true,
                })
              }
            }
            if (d.allowed) return
            const times = (refused.get(ip) ?? []).filter((t) => now - t <= p.withinMs)
            times.push(now)
            refused.set(ip, times)
            if (d.banned === true && now >= until) {
              expect(times.length, `${ip} banned at ${now} after ${times.length} refusals`).toBe(
                Math.max(times.length, p.after),
              )
              bannedUntil.set(ip, now + p.forMs)
            }
          }
          let flood = 0
          for (const s of steps) {
            if (s.t === 'tick') advance(s.ms)
            else if (s.t === 'request') {
              for (let j = 0; j < s.times; j++) await request(`203.0.113.${s.client + 1}`)
            } else {
              for (let k = 0; k < s.keys; k++) {
                const ip = `2001:db8:${(flood++).toString(16)}::1`
                for (let j = 0; j < s.each; j++) await request(ip)
              }
            }
            expect(store.size).toBeLessThanOrEqual(maxKeys)
          }
        },
      ),
      { numRuns: 600 },
    )
  })
})
