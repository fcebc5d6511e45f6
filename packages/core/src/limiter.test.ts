import { describe, expect, it, vi } from 'vitest'
import type { AlgorithmResult } from './algorithms/algorithm.js'
import type { Decision } from './decision.js'
import { createLimiter, type LimiterOptions } from './limiter.js'
import type { Logger } from './logger.js'
import type { RequestFacts } from './request-facts.js'
import type { RuleInput } from './rules/schema.js'
import { MemoryStore } from './stores/memory-store.js'
import { asyncMemoryStore } from './testing/async-memory-store.js'
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
  const check = (f: Partial<RequestFacts> = {}): Decision => {
    const d = limiter.check(facts(f))
    if (d instanceof Promise) throw new Error('expected a synchronous decision')
    return d
  }
  return { limiter, check, advance: (ms: number) => (now += ms) }
}

function logger() {
  const log = { debug: vi.fn(), info: vi.fn(), warn: vi.fn(), error: vi.fn() }
  return log satisfies Logger
}

describe('createLimiter', () => {
  it('allows, then rejects with the rule, status and retry hint', () => {
    const { check } = clocked([{ id: 'per-ip', limit: 2, window: '1s' }])
    expect(check()).toMatchObject({ allowed: true, action: 'allow', remaining: 1 })
    expect(check()).toMatchObject({ allowed: true, remaining: 0 })
    const refused = check()
    expect(refused).toMatchObject({
      allowed: false,
      action: 'reject',
      status: 429,
      retryAfterMs: 500,
    })
    expect(refused.rule?.id).toBe('per-ip')
  })

  it('answers 503 or drops when the rule says so', () => {
    const a = clocked([
      { id: 'r', limit: 1, window: '1s', onLimit: { action: 'reject', status: 503 } },
    ])
    a.check()
    expect(a.check()).toMatchObject({ action: 'reject', status: 503 })
    const b = clocked([{ id: 'r', limit: 1, window: '1s', onLimit: 'drop' }])
    b.check()
    expect(b.check()).toMatchObject({ allowed: false, action: 'drop' })
  })

  it('passes only when every matching rule allows, and charges none otherwise', () => {
    const { check } = clocked([
      { id: 'wide', limit: 10, window: '1s' },
      { id: 'export', match: 'POST /export', limit: 1, window: '1s', algorithm: 'fixed-window' },
    ])
    expect(check({ method: 'POST', path: '/export' }).allowed).toBe(true)
    expect(check({ method: 'POST', path: '/export' })).toMatchObject({ allowed: false })
    expect(check({ method: 'POST', path: '/export' }).rule?.id).toBe('export')
    // Two refused exports did not touch the wide rule: 10 - 1 = 9 left before this request.
    expect(check({ method: 'GET', path: '/' }).remaining).toBe(8)
  })

  it('multiplies rule cost by the route cost', () => {
    const { check } = clocked([{ id: 'r', limit: 10, window: '1s', cost: 2 }])
    expect(check({ cost: 3 }).remaining).toBe(4)
    expect(check({ cost: 3 }).allowed).toBe(false)
  })

  it('queues within maxWait and a bounded queue, reserving tokens, then rejects', async () => {
    const { limiter, check } = clocked([
      {
        id: 'q',
        limit: 1,
        window: '1s',
        onLimit: { action: 'queue', maxWait: '1500ms', maxQueue: 1 },
      },
    ])
    check()
    const queued = check()
    expect(queued).toMatchObject({ allowed: true, action: 'queue', waitMs: 1000 })
    // The queue of one is full now.
    expect(check()).toMatchObject({ allowed: false, action: 'reject', status: 429 })
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] })
    try {
      const waiting = limiter.waitInQueue(queued)
      vi.advanceTimersByTime(1000)
      await expect(waiting).resolves.toBe(true)
    } finally {
      vi.useRealTimers()
    }
    expect(limiter.counters().byRule.get('q')).toMatchObject({ allowed: 1, queued: 1, rejected: 1 })
  })

  it('takes the queue place when an asynchronous store answers, so concurrent checks cannot overfill it', async () => {
    const memory = new MemoryStore()
    const slow = asyncMemoryStore(memory)
    let now = 0
    const limiter = createLimiter({
      rules: [
        {
          id: 'q',
          limit: 1,
          window: '1s',
          onLimit: { action: 'queue', maxWait: '5s', maxQueue: 1 },
        },
      ],
      store: slow,
      clock: () => now,
    })
    await limiter.check(facts())
    const [a, b] = await Promise.all([limiter.check(facts()), limiter.check(facts())])
    expect([a.action, b.action].sort()).toEqual(['queue', 'reject'])
    now += 1
    // The refused one gave its place back; the queued one still holds it.
    expect((await limiter.check(facts())).action).toBe('reject')
  })

  it('refunds the reservation and frees the place when a queued client goes away', async () => {
    const { limiter, check, advance } = clocked([
      { id: 'q', limit: 1, window: '1s', onLimit: { action: 'queue', maxWait: '5s', maxQueue: 1 } },
    ])
    check()
    const queued = check()
    const ac = new AbortController()
    const waiting = limiter.waitInQueue(queued, ac.signal)
    ac.abort()
    await expect(waiting).resolves.toBe(false)
    // The abandoned reservation was given back: one second later a token is there again.
    advance(1000)
    expect(check()).toMatchObject({ action: 'allow' })
  })

  it('holds concurrency slots until release, once', () => {
    const { limiter, check } = clocked([{ id: 'c', algorithm: 'concurrency', limit: 1 }])
    const first = check()
    expect(first.allowed).toBe(true)
    expect(check().allowed).toBe(false)
    limiter.release(first)
    limiter.release(first)
    const second = check()
    expect(second.allowed).toBe(true)
    expect(check().allowed).toBe(false)
  })

  it('shadow rules report but never block', () => {
    const { limiter, check } = clocked([{ id: 'trial', limit: 1, window: '1s', shadow: true }])
    check()
    const d = check()
    expect(d).toMatchObject({ allowed: true, action: 'allow' })
    expect(d.outcomes[0]).toMatchObject({ shadow: true, allowed: false })
    expect(limiter.counters().byRule.get('trial')?.shadowRejected).toBe(1)
  })

  it('fails open with one log line per interval when the store throws', () => {
    const log = logger()
    const broken: Store = {
      consume: () => {
        throw new Error('boom')
      },
      refund: () => {},
    }
    const { limiter, check } = clocked([{ id: 'r', limit: 1, window: '1s' }], {
      store: broken,
      logger: log,
    })
    for (let i = 0; i < 5; i++) expect(check()).toMatchObject({ allowed: true, failedOpen: true })
    expect(log.warn).toHaveBeenCalledTimes(1)
    expect(log.warn.mock.calls[0]![0]).toMatchObject({ code: 'FG_WRN_STORE_FAILED_OPEN' })
    expect(limiter.counters().total.failedOpen).toBe(5)
  })

  it('fails open when an asynchronous store misses its deadline', async () => {
    const hanging: Store = {
      consume: () => new Promise<AlgorithmResult[]>(() => {}),
      refund: () => {},
    }
    const limiter = createLimiter({
      rules: [{ id: 'r', limit: 1, window: '1s' }],
      store: hanging,
      decisionTimeoutMs: 5,
    })
    const d = await limiter.check(facts())
    expect(d).toMatchObject({ allowed: true, failedOpen: true, outcomes: [] })
  })

  it('fails open when an asynchronous store rejects', async () => {
    const failing: Store = { consume: () => Promise.reject(new Error('down')), refund: () => {} }
    const limiter = createLimiter({ rules: [{ id: 'r', limit: 1, window: '1s' }], store: failing })
    await expect(limiter.check(facts())).resolves.toMatchObject({ failedOpen: true })
  })

  it('arms no timer of its own when the store keeps a deadline no longer than timeoutMs', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] })
    try {
      let fail: (err: Error) => void = () => {}
      const pending = (): Promise<AlgorithmResult[]> =>
        new Promise<AlgorithmResult[]>((_, reject) => (fail = reject))
      const rules = [{ id: 'r', limit: 1, window: '1s' }]
      const bounded = createLimiter({
        rules,
        decisionTimeoutMs: 50,
        store: { settlesWithinMs: 50, consume: pending, refund: () => {} },
      })
      const decision = bounded.check(facts())
      expect(vi.getTimerCount()).toBe(0)
      fail(new Error('redis store: no answer within 50 ms'))
      await expect(decision).resolves.toMatchObject({ allowed: true, failedOpen: true })

      // A store whose bound is longer than the limiter's deadline gets the limiter's timer.
      const slower = createLimiter({
        rules,
        decisionTimeoutMs: 50,
        store: { settlesWithinMs: 500, consume: pending, refund: () => {} },
      })
      const late = slower.check(facts())
      expect(vi.getTimerCount()).toBe(1)
      await vi.advanceTimersByTimeAsync(50)
      await expect(late).resolves.toMatchObject({ allowed: true, failedOpen: true })
    } finally {
      vi.useRealTimers()
    }
  })

  it('never hangs on a store that promises settlesWithinMs and then never answers', async () => {
    vi.useFakeTimers({
      toFake: ['setTimeout', 'clearTimeout', 'setInterval', 'clearInterval', 'Date'],
    })
    try {
      const liar = createLimiter({
        rules: [{ id: 'r', limit: 1, window: '1s' }],
        decisionTimeoutMs: 50,
        store: { settlesWithinMs: 50, consume: () => new Promise(() => {}), refund: () => {} },
      })
      let answered: unknown
      void (liar.check(facts()) as Promise<unknown>).then((d) => (answered = d))
      await vi.advanceTimersByTimeAsync(99)
      expect(answered).toBeUndefined()
      // Twice the promised bound, found by the next sweep (one sweep per timeoutMs).
      await vi.advanceTimersByTimeAsync(51)
      expect(answered).toMatchObject({ allowed: true, failedOpen: true })
      await liar.close()
      expect(vi.getTimerCount()).toBe(0)
    } finally {
      vi.useRealTimers()
    }
  })

  it('keeps the rules in force when the store refuses the new set in retain()', () => {
    const limiter = createLimiter({ rules: [{ id: 'r', limit: 1, window: '1s' }], store: picky() })
    expect(limiter.check(facts())).toMatchObject({ allowed: true })
    expect(() =>
      limiter.updateRules([{ id: 'windowed', algorithm: 'fixed-window', limit: 5, window: '1s' }]),
    ).toThrow(/unsupported rule/)
    expect(limiter.rules.map((r) => r.id)).toEqual(['r'])
    expect(limiter.check(facts())).toMatchObject({ allowed: false, rule: { id: 'r' } })
  })

  it('lets the store refuse per-route rules when they are compiled, not on a request', () => {
    const retained: string[][] = []
    const store = picky((ids) => retained.push([...ids].map((id) => id.split('|')[0]!)))
    const limiter = createLimiter({ rules: [{ id: 'r', limit: 5, window: '1s' }], store })
    const route = limiter.compileRules([{ id: 'route', limit: 1, window: '1s' }])
    expect(retained.at(-1)).toEqual(['r', 'route'])
    expect(() =>
      limiter.compileRules([{ id: 'windowed', algorithm: 'fixed-window', limit: 5, window: '1s' }]),
    ).toThrow(/unsupported rule/)
    // The refused set is not kept: a later update does not carry it to the store.
    limiter.updateRules([{ id: 'r2', limit: 5, window: '1s' }])
    expect(retained.at(-1)).toEqual(['r2', 'route'])
    expect(limiter.check({ ...facts(), routeRules: route })).toMatchObject({ allowed: true })
  })

  it('refuses a bad rule update and keeps the rules in force', () => {
    const { limiter, check } = clocked([{ id: 'r', limit: 1, window: '1s' }])
    check()
    expect(() => limiter.updateRules([{ id: 'r', limit: -1, window: '1s' }])).toThrow(
      /rules\[0\]\.limit: expected a positive integer, got -1/,
    )
    expect(check().allowed).toBe(false)
    expect(limiter.rules.map((r) => r.limit)).toEqual([1])
  })

  it('keeps the state of rules that did not change across a swap', () => {
    const { limiter, check } = clocked([{ id: 'a', limit: 1, window: '1s' }])
    check()
    limiter.updateRules([
      { id: 'a', limit: 1, window: '1s' },
      { id: 'b', limit: 5, window: '1s', match: '/other' },
    ])
    expect(check().allowed).toBe(false)
    limiter.updateRules([{ id: 'a', limit: 2, window: '1s' }])
    expect(check().allowed).toBe(true)
  })

  it('refuses a rule whose key builder is not registered', () => {
    expect(() =>
      createLimiter({ rules: [{ id: 'u', key: 'user', limit: 1, window: '1s' }] }),
    ).toThrow(/rules\[0\]\.key: key "user" needs a key builder registered as keys\.user/)
  })

  it('keys by user through a registered builder, falling back to the IP', () => {
    const limiter = createLimiter<{ user?: string }>({
      rules: [{ id: 'u', key: 'user', limit: 1, window: '1m' }],
      keys: { user: (req) => req.user },
    })
    const as = (user?: string) => limiter.check({ ...facts(), request: { user } }) as Decision
    expect(as('alice').allowed).toBe(true)
    expect(as('alice').allowed).toBe(false)
    expect(as('bob').allowed).toBe(true)
    expect(as(undefined).allowed).toBe(true)
    expect(as(undefined).allowed).toBe(false)
  })

  it('groups an IPv6 /64 into one client', () => {
    const { check } = clocked([{ id: 'r', limit: 1, window: '1m' }])
    expect(check({ ip: '2001:db8:1:2::1' }).allowed).toBe(true)
    expect(check({ ip: '2001:db8:1:2:dead:beef:0:1' }).allowed).toBe(false)
    expect(check({ ip: '2001:db8:1:3::1' }).allowed).toBe(true)
  })

  it('applies per-route rules compiled at startup atomically with the global ones', () => {
    const { limiter, check } = clocked([{ id: 'global', limit: 3, window: '1m' }])
    const route = limiter.compileRules([{ id: 'export', limit: 1, window: '1m' }])
    expect(check({ routeRules: route }).allowed).toBe(true)
    expect(check({ routeRules: route }).allowed).toBe(false)
    expect(check().remaining).toBe(1)
    expect(() => limiter.compileRules([{ id: 'bad', limit: 0, window: '1m' }])).toThrow(/limit/)
  })

  it('lets nothing through a rule set when no rule matches, without headers or state', () => {
    const { check } = clocked([{ id: 'r', match: '/admin/**', limit: 1, window: '1m' }])
    expect(check({ path: '/public' })).toMatchObject({ allowed: true, outcomes: [] })
  })

  it('refuses bad options by name', () => {
    expect(() => createLimiter({ decisionTimeoutMs: 0 })).toThrow(
      /decisionTimeoutMs: expected an integer from 1/,
    )
    expect(() => createLimiter({ ipv6Subnet: 129 })).toThrow(/ipv6Subnet/)
  })

  it('calls onDecision and survives it throwing', () => {
    const seen: string[] = []
    const { check } = clocked([{ id: 'r', limit: 1, window: '1s' }], {
      onDecision: (d) => {
        seen.push(d.action)
        throw new Error('observer bug')
      },
    })
    check()
    check()
    expect(seen).toEqual(['allow', 'reject'])
  })

  it('walks the token bucket example of the design exactly', () => {
    const { check, advance } = clocked([{ id: 'tb', limit: 10, window: '1s' }])
    advance(300)
    expect(check({ cost: 6 })).toMatchObject({ allowed: true, remaining: 4 })
    advance(200)
    expect(check({ cost: 5 })).toMatchObject({ allowed: true, remaining: 1 })
    advance(1000)
    // Full again (10 tokens), never more: 10 pass, the 11th does not.
    expect(check({ cost: 10 })).toMatchObject({ allowed: true, remaining: 0 })
    expect(check().allowed).toBe(false)
  })
})

/** A MemoryStore that refuses, in retain(), any rule whose id starts with "windowed". */
function picky(onRetain?: (ids: ReadonlySet<string>) => void): Store {
  const memory = new MemoryStore()
  return {
    synchronous: true,
    consume: (entries, nowMs) => memory.consume(entries, nowMs),
    refund: (entries, nowMs) => memory.refund(entries, nowMs),
    retain(ids) {
      if ([...ids].some((id) => id.startsWith('windowed'))) throw new Error('unsupported rule')
      onRetain?.(ids)
      memory.retain(ids)
    },
  }
}
