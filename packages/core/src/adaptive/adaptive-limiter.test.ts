import { describe, expect, it } from 'vitest'
import type { AlgorithmResult } from '../algorithms/algorithm.js'
import type { Decision } from '../decision.js'
import { formatHeaders } from '../http/headers.js'
import { problemDetails } from '../http/problem-details.js'
import { createLimiter } from '../limiter.js'
import type { LimiterOptions } from '../limiter-types.js'
import type { RuleInput } from '../rules/schema.js'
import { MemoryStore } from '../stores/memory-store.js'
import type { ConsumeEntry, RefundEntry, Store } from '../stores/store.js'

// The adaptive rule through the limiter: the same decision, headers, problem+json body, shadow
// mode, counters and fail-open as every rule, all-or-nothing beside other rules.

const facts = (ip = '203.0.113.7', path = '/work') => ({ method: 'GET', path, ip, headers: {} })

function setup(
  adaptive: Record<string, unknown> = {},
  more: Partial<RuleInput> = {},
  options: Partial<LimiterOptions> = {},
  extra: RuleInput[] = [],
) {
  const clock = { now: 1_000_000 }
  const rule = {
    id: 'shed',
    algorithm: 'adaptive',
    adaptive: {
      target: '100ms',
      window: '1s',
      initialLimit: 3,
      minSamples: 1,
      reserve: 0,
      ...adaptive,
    },
    ...more,
  } as RuleInput
  const limiter = createLimiter({ clock: () => clock.now, rules: [rule, ...extra], ...options })
  const check = (ip?: string, path?: string) => limiter.check(facts(ip, path)) as Decision
  return { limiter, clock, check }
}

describe('adaptive rule through the limiter', () => {
  it('admits up to its limit, then refuses with 503, Retry-After and a problem+json body', () => {
    const { check } = setup()
    const admitted = [check(), check(), check()]
    expect(admitted.map((d) => [d.allowed, d.limit, d.remaining])).toEqual([
      [true, 3, 2],
      [true, 3, 1],
      [true, 3, 0],
    ])
    const refused = check()
    expect(refused).toMatchObject({ allowed: false, action: 'reject', status: 503, limit: 3 })
    expect(refused.retryAfterMs).toBeGreaterThanOrEqual(1000)
    expect(Object.fromEntries(formatHeaders(refused))).toEqual({
      'RateLimit-Policy': '"shed";q=3',
      RateLimit: '"shed";r=0;t=1',
      'Retry-After': '1',
    })
    expect(problemDetails(refused)).toMatchObject({
      status: 503,
      title: 'Service Unavailable',
      'violated-policies': ['shed'],
      detail: 'Service overloaded, load shed (shed); retry in 1 s.',
    })
    expect(formatHeaders(admitted[0]!, { format: 'draft-7' })).toEqual([
      ['RateLimit-Policy', '3'],
      ['RateLimit', 'limit=3, remaining=2, reset=0'],
    ])
  })

  it('frees a slot on release, once, and counts what it decided', () => {
    const { limiter, check } = setup()
    const ds = [check(), check(), check()]
    expect(check().allowed).toBe(false)
    limiter.release(ds[0]!)
    limiter.release(ds[0]!)
    expect(limiter.adaptive('shed')!.inFlight).toBe(2)
    expect(check().allowed).toBe(true)
    expect(check().allowed).toBe(false)
    const c = limiter.counters()
    expect(c.byRule.get('shed')).toMatchObject({ allowed: 4, rejected: 2 })
    expect(c.inFlight.get('shed')).toBe(3)
  })

  it('measures latency from the decision to the release, on the injected clock, and moves the limit', () => {
    const { limiter, clock, check } = setup({ initialLimit: 10, maxLimit: 40 })
    for (let w = 0; w < 3; w++) {
      const ds = Array.from({ length: 10 }, () => check())
      clock.now += 400 // four times the target
      for (const d of ds) limiter.release(d)
      clock.now += 600
    }
    const s = limiter.adaptive('shed')!
    expect(s.percentileMs).toBeGreaterThan(396)
    expect(s.percentileMs).toBeLessThan(404)
    // Halved at most per window, smoothed by half: 10 → 7.5 → 5.6 → 4.2.
    expect(s.limit).toBe(4)
    expect(s.windows).toBe(3)
  })

  it('measures no latency for a request released as abandoned (never served), and frees its slot', () => {
    const { limiter, clock, check } = setup({ initialLimit: 10, percentile: 50 })
    // Clients giving up at once: were they measured, p50 would fall to 0 and the limit climb.
    const gone = Array.from({ length: 5 }, () => check())
    for (const d of gone) limiter.release(d, 'abandoned')
    expect(limiter.adaptive('shed')!.inFlight).toBe(0)
    const served = check()
    clock.now += 300
    limiter.release(served)
    clock.now += 700
    check()
    const s = limiter.adaptive('shed')!
    expect(s.samples).toBe(1)
    expect(s.percentileMs).toBeGreaterThan(296)
    expect(s.limit).toBeLessThan(10)
  })
  it('shadow: reports the refusal it would make and lets the request pass', () => {
    const { limiter, check } = setup({}, { shadow: true })
    const ds = [check(), check(), check(), check()]
    expect(ds.every((d) => d.allowed)).toBe(true)
    expect(ds[3]!.outcomes[0]).toMatchObject({ allowed: false, shadow: true })
    expect(formatHeaders(ds[3]!)).toEqual([])
    expect(limiter.counters().byRule.get('shed')).toMatchObject({ shadowRejected: 1, rejected: 0 })
    // Only the requests it would have admitted hold a slot.
    expect(limiter.adaptive('shed')!.inFlight).toBe(3)
  })

  it('drops the connection when told to', () => {
    const { check } = setup({}, { onLimit: 'drop' })
    check()
    check()
    check()
    expect(check()).toMatchObject({ allowed: false, action: 'drop' })
  })

  it('keeps its gate across a rules swap that leaves it unchanged; a change starts a new limit but keeps the requests in flight', () => {
    const { limiter, check } = setup()
    const first = check()
    const rule = limiter.rules[0]!
    const input = {
      id: 'shed',
      algorithm: 'adaptive',
      adaptive: { target: '100ms', window: '1s', initialLimit: 3, minSamples: 1, reserve: 0 },
    } as RuleInput
    limiter.updateRules([input, { id: 'other', limit: 5, window: '1s' }])
    expect(limiter.rules[0]).not.toBe(rule)
    expect(limiter.adaptive('shed')!.inFlight).toBe(1)
    limiter.updateRules([{ ...input, adaptive: { target: '200ms', initialLimit: 2 } }])
    // The request admitted before the change still runs: it counts against the new limit.
    expect(limiter.adaptive('shed')).toMatchObject({ inFlight: 1, limit: 2, targetMs: 200 })
    expect(check().allowed).toBe(true)
    expect(check().allowed).toBe(false)
    limiter.release(first)
    expect(limiter.adaptive('shed')).toMatchObject({ inFlight: 1, clients: 1 })
    limiter.updateRules([{ id: 'other', limit: 5, window: '1s' }])
    expect(limiter.adaptive('shed')).toBeUndefined()
  })

  it('answers undefined for a rule that is not adaptive, and refuses a rule id that is not a string', () => {
    const { limiter } = setup({}, {}, {}, [{ id: 'tb', limit: 5, window: '1s' }])
    expect(limiter.adaptive('tb')).toBeUndefined()
    expect(() => limiter.adaptive(5 as unknown as string)).toThrow(
      /adaptive: ruleId: expected a rule id/,
    )
  })

  it('works for route rules compiled at startup', () => {
    const { limiter } = setup()
    limiter.updateRules([])
    const routeRules = limiter.compileRules([
      { id: 'route-shed', algorithm: 'adaptive', adaptive: { initialLimit: 1, minLimit: 1 } },
    ])
    const f = { ...facts(), routeRules }
    expect((limiter.check(f) as Decision).allowed).toBe(true)
    expect((limiter.check(f) as Decision).status).toBe(503)
    expect(limiter.adaptive('route-shed')!.inFlight).toBe(1)
  })

  it('tells limiter.get() the limit and the slots free', async () => {
    const { limiter, check } = setup()
    check()
    const [state] = await limiter.get('203.0.113.7', { rule: 'shed' })
    expect(state).toMatchObject({ limit: 3, remaining: 2 })
  })
})

describe('adaptive rule beside other rules: all-or-nothing', () => {
  const tb: RuleInput = { id: 'tb', limit: 10, window: '1m' }

  it('charges the other rules nothing when the adaptive rule refuses', () => {
    const { check } = setup({}, {}, {}, [tb])
    check()
    check()
    const third = check()
    expect(third.outcomes[1]).toMatchObject({ rule: { id: 'tb' }, remaining: 7 })
    const refused = check()
    expect(refused).toMatchObject({ allowed: false, status: 503, rule: { id: 'shed' } })
    // What remained before the refused request: nothing was charged.
    expect(refused.outcomes[1]).toMatchObject({ allowed: true, remaining: 7 })
    const refusedAgain = check()
    expect(refusedAgain.outcomes[1]).toMatchObject({ remaining: 7 })
  })

  it('takes no adaptive slot when another rule refuses', () => {
    const { limiter, check } = setup({ initialLimit: 5 }, {}, {}, [
      { id: 'tb', limit: 1, window: '1m' },
    ])
    expect(check().allowed).toBe(true)
    const refused = check()
    expect(refused).toMatchObject({ allowed: false, status: 429, rule: { id: 'tb' } })
    expect(limiter.adaptive('shed')!.inFlight).toBe(1)
  })

  it('decides with an asynchronous store too, and fails open (holding nothing) when it fails', async () => {
    let fail = false
    const memory = new MemoryStore()
    const store: Store = {
      consume: (entries: readonly ConsumeEntry[], nowMs: number) =>
        fail
          ? Promise.reject(new Error('down'))
          : Promise.resolve(
              (memory.consume(entries, nowMs) as AlgorithmResult[]).map((r) => ({ ...r })),
            ),
      refund: (entries: readonly RefundEntry[], nowMs: number) => memory.refund(entries, nowMs),
    }
    const { limiter } = setup({}, {}, { store }, [tb])
    const d = await limiter.check(facts())
    expect(d).toMatchObject({ allowed: true, failedOpen: false })
    expect(limiter.adaptive('shed')!.inFlight).toBe(1)
    fail = true
    const failed = await limiter.check(facts())
    expect(failed).toMatchObject({ allowed: true, failedOpen: true })
    expect(limiter.adaptive('shed')!.inFlight).toBe(1)
    expect(limiter.counters().byRule.get('shed')!.failedOpen).toBe(1)
  })

  it('refuses when the gate filled up during an asynchronous round trip, and gives the charge back', async () => {
    const memory = new MemoryStore()
    const store: Store = {
      consume: (entries: readonly ConsumeEntry[], nowMs: number) =>
        Promise.resolve(
          (memory.consume(entries, nowMs) as AlgorithmResult[]).map((r) => ({ ...r })),
        ),
      refund: (entries: readonly RefundEntry[], nowMs: number) => memory.refund(entries, nowMs),
      peek: (entries, nowMs) => memory.peek(entries, nowMs),
    }
    const { limiter } = setup({}, {}, { store }, [tb])
    // Four requests look at a gate of 3 before any store answer comes back.
    const ds = await Promise.all([1, 2, 3, 4].map(() => Promise.resolve(limiter.check(facts()))))
    expect(ds.map((d) => d.allowed)).toEqual([true, true, true, false])
    expect(ds[3]).toMatchObject({ status: 503, rule: { id: 'shed' } })
    expect(limiter.adaptive('shed')!.inFlight).toBe(3)
    // The refused request's token came back: 10 - 3 remain.
    const [tbState] = await limiter.get('203.0.113.7', { rule: 'tb' })
    expect(tbState!.remaining).toBe(7)
  })
})

describe('slots the store named', () => {
  it('are given back by name when the gate refuses after the store admitted the others', async () => {
    // A store that names each slot (RedisStore) frees by name only; a release without the
    // name freed the oldest slot instead, one a request still running holds.
    const memory = new MemoryStore()
    let names = 0
    const refunds: RefundEntry[] = []
    const store: Store = {
      consume: (entries: readonly ConsumeEntry[], nowMs: number) =>
        Promise.resolve(
          (memory.consume(entries, nowMs) as AlgorithmResult[]).map((r, i) =>
            entries[i]!.rule.algorithm.name === 'concurrency' && r.allowed
              ? { ...r, lease: ++names }
              : { ...r },
          ),
        ),
      refund: (entries: readonly RefundEntry[], nowMs: number) => {
        refunds.push(...entries)
        return memory.refund(entries, nowMs)
      },
    }
    const conc: RuleInput = { id: 'conc', algorithm: 'concurrency', limit: 10, key: ['ip'] }
    const { limiter } = setup({}, {}, { store }, [conc])
    // Four requests look at a gate of 3 before any store answer comes back: the 4th is refused
    // by the gate after the store gave it slot 4.
    const ds = await Promise.all([1, 2, 3, 4].map(() => Promise.resolve(limiter.check(facts()))))
    expect(ds.map((d) => d.allowed)).toEqual([true, true, true, false])
    expect(refunds.map((e) => [e.rule.rule.id, e.lease])).toEqual([['conc', 4]])
  })
})

describe('fairness at the gate', () => {
  it('refuses a client over its fair share within the reserve, while a newcomer passes', () => {
    const { limiter, check } = setup({ initialLimit: 10, reserve: 0.3 })
    // The noisy client alone: admitted while 7 or fewer (10 less the reserve of 3) are in flight.
    for (let i = 0; i < 7; i++) expect(check('192.0.2.1').allowed).toBe(true)
    expect(check('192.0.2.1').allowed).toBe(false)
    // Newcomers get the reserve.
    expect(check('198.51.100.1').allowed).toBe(true)
    expect(check('198.51.100.2').allowed).toBe(true)
    expect(check('198.51.100.3').allowed).toBe(true)
    // The limit itself binds everyone.
    expect(check('198.51.100.4').allowed).toBe(false)
    expect(limiter.adaptive('shed')).toMatchObject({ inFlight: 10, clients: 4, shedOverShare: 1 })
  })
})

describe('priorities: rules sharing a gate, background shed first', () => {
  const shared = { target: '100ms', window: '1s', initialLimit: 10, reserve: 0.3, gate: 'api' }
  const rules: RuleInput[] = [
    { id: 'checkout', match: '/checkout', algorithm: 'adaptive', adaptive: shared },
    {
      id: 'reports',
      match: '/reports/**',
      algorithm: 'adaptive',
      adaptive: { ...shared, priority: 'background' },
    },
  ]

  it('refuses background requests once only the reserve is left, while normal ones pass', () => {
    const limiter = createLimiter({ clock: () => 1_000_000, rules })
    const at = (path: string, ip: string) => limiter.check(facts(ip, path)) as Decision
    // Seven background requests from seven clients fill the gate up to its reserve (10 × 0.3).
    for (let i = 0; i < 7; i++) expect(at('/reports/daily', `198.51.100.${i}`).allowed).toBe(true)
    expect(at('/reports/daily', '198.51.100.99')).toMatchObject({ allowed: false, status: 503 })
    // The reserve is the normal traffic's.
    for (let i = 0; i < 3; i++) expect(at('/checkout', `203.0.113.${i}`).allowed).toBe(true)
    expect(at('/checkout', '203.0.113.99').allowed).toBe(false)
    // One gate: both rules report it.
    expect(limiter.adaptive('reports')).toMatchObject({
      ruleId: 'api',
      inFlight: 10,
      shedBackground: 1,
    })
    expect(limiter.adaptive('checkout')).toMatchObject({ ruleId: 'api', inFlight: 10 })
    // Slots by rule in counters(): each rule its own.
    expect(limiter.counters().inFlight).toEqual(
      new Map([
        ['reports', 7],
        ['checkout', 3],
      ]),
    )
  })

  it('refuses rules that share a gate with different settings, naming the gate', () => {
    expect(() =>
      createLimiter({
        rules: [rules[0]!, { ...rules[1]!, adaptive: { ...shared, target: '200ms' } }],
      }),
    ).toThrow(
      'rules[1].adaptive.gate: rules sharing gate "api" need the same key and settings (but priority) as rules[0]',
    )
  })

  it('holds a gate to one setting across the global rules and the route rules, either way round', () => {
    const other = { ...rules[1]!, adaptive: { ...shared, target: '200ms' } }
    const limiter = createLimiter({ rules: [rules[0]!] })
    expect(() => limiter.compileRules([other])).toThrow(
      'routeRules[0].adaptive.gate: rules sharing gate "api" need the same key and settings (but priority) as rule "checkout" in force',
    )
    // Agreeing route rules are taken, and then a global set that disagrees with them is refused
    // with the rules in force kept.
    limiter.compileRules([rules[1]!])
    expect(() =>
      limiter.updateRules([{ ...rules[0]!, adaptive: { ...shared, window: '2s' } }]),
    ).toThrow(
      'rules[0].adaptive.gate: rules sharing gate "api" need the same key and settings (but priority) as rule "reports" in force',
    )
    expect(limiter.adaptive('checkout')?.windowMs).toBe(1000)
  })
})
