import fc from 'fast-check'
import { createHash } from 'node:crypto'
import { describe, expect, it, vi } from 'vitest'
import type { Decision } from './decision.js'
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
  const check = (f: Partial<RequestFacts> = {}): Decision => {
    const d = limiter.check(facts(f))
    if (d instanceof Promise) throw new Error('expected a synchronous decision')
    return d
  }
  return { limiter, check, advance: (ms: number) => (now += ms) }
}

const byKey: RuleInput = { id: 'per-key', key: 'header:x-api-key', limit: 1, window: '1m' }
const asClient = (key: string): Partial<RequestFacts> => ({ headers: { 'x-api-key': key } })

/** Refuse `key` `times` times (its first request is admitted). */
function refuse(check: (f: Partial<RequestFacts>) => Decision, key: string, times: number): void {
  for (let i = 0; i <= times; i++) check(asClient(key))
}

describe('limiter.topClients', () => {
  it('lists the clients a rule refused most, as salted hashes, most refused first', () => {
    const { limiter, check } = clocked([byKey], { topClients: { salt: 'pepper' } })
    refuse(check, 'key-a', 5)
    refuse(check, 'key-b', 2)
    refuse(check, 'key-c', 0)
    const hash = (k: string): string =>
      'sha256:' +
      createHash('sha256').update('pepper').update('\u0000').update(k).digest('hex').slice(0, 16)
    expect(limiter.topClients('per-key')).toEqual([
      { client: hash('key-a'), count: 5, error: 0 },
      { client: hash('key-b'), count: 2, error: 0 },
    ])
    expect(limiter.topClients('per-key', { limit: 1 })).toHaveLength(1)
    expect(limiter.topClients('unknown-rule')).toEqual([])
  })

  it('shows clear keys only when asked, and a per-process salt by default', () => {
    const clear = clocked([byKey], { topClients: { clearKeys: true } })
    refuse(clear.check, 'key-a', 1)
    expect(clear.limiter.topClients('per-key')).toEqual([{ client: 'key-a', count: 1, error: 0 }])
    const a = clocked([byKey])
    const b = clocked([byKey])
    refuse(a.check, 'key-a', 1)
    refuse(b.check, 'key-a', 1)
    const [ha] = a.limiter.topClients('per-key')
    const [hb] = b.limiter.topClients('per-key')
    expect(ha?.client).toMatch(/^sha256:[0-9a-f]{16}$/)
    expect(ha?.client).not.toBe(hb?.client)
    expect(ha?.client).not.toContain('key-a')
  })

  it('stays within its size, keeping the heavy client', () => {
    const { limiter, check } = clocked([byKey], { topClients: { size: 3, clearKeys: true } })
    // 'heavy' is refused every time after its first request: 99 refusals in all.
    for (let i = 0; i < 50; i++) {
      refuse(check, 'heavy', 1)
      refuse(check, `light-${i}`, 1)
    }
    const top = limiter.topClients('per-key', { limit: 100 })
    expect(top).toHaveLength(3)
    expect(top[0]).toMatchObject({ client: 'heavy' })
    expect(top[0]!.count - top[0]!.error).toBeLessThanOrEqual(99)
    expect(top[0]!.count).toBeGreaterThanOrEqual(99)
  })

  it('counts shadow rules’ would-be refusals, not queued requests', () => {
    const { limiter, check } = clocked(
      [
        { id: 'trial', key: 'header:x-api-key', limit: 1, window: '1m', shadow: true },
        {
          id: 'q',
          key: 'header:x-api-key',
          limit: 1,
          window: '1m',
          onLimit: { action: 'queue', maxWait: '2m', maxQueue: 5 },
        },
      ],
      { topClients: { clearKeys: true } },
    )
    check(asClient('k'))
    expect(check(asClient('k')).action).toBe('queue')
    expect(limiter.topClients('trial')).toEqual([{ client: 'k', count: 1, error: 0 }])
    expect(limiter.topClients('q')).toEqual([])
  })

  it('forgets rules that left the rule set', () => {
    const { limiter, check } = clocked([byKey], { topClients: { clearKeys: true } })
    refuse(check, 'k', 1)
    limiter.updateRules([byKey, { id: 'other', limit: 5, window: '1s' }])
    expect(limiter.topClients('per-key')).toHaveLength(1)
    limiter.updateRules([{ id: 'other', limit: 5, window: '1s' }])
    expect(limiter.topClients('per-key')).toEqual([])
  })

  it('does not bring back the summary of a rule replaced while a refusal was in flight', async () => {
    // An asynchronous store: the refusals are decided under the old rules, after the swap.
    const memory = new MemoryStore()
    let gate: Promise<void> = Promise.resolve()
    const store: Store = {
      consume: async (entries, now) => {
        const results = memory.consume(entries, now).map((r) => ({ ...r }))
        await gate
        return results
      },
      refund: (entries, now) => memory.refund(entries, now),
    }
    const shadow: RuleInput = { ...byKey, id: 'trial', shadow: true }
    const limiter = createLimiter({ rules: [byKey, shadow], store })
    await limiter.check(facts(asClient('k')))
    let open!: () => void
    gate = new Promise((resolve) => (open = resolve))
    const late = limiter.check(facts(asClient('k')))
    limiter.updateRules([{ id: 'other', limit: 5, window: '1s' }])
    open()
    expect((await late).allowed).toBe(false)
    expect(limiter.topClients('per-key')).toEqual([])
    expect(limiter.topClients('trial')).toEqual([])
  })

  it('refuses bad options and queries with errors naming them', () => {
    const make = (topClients: unknown) => () =>
      createLimiter({ topClients: topClients as LimiterOptions['topClients'] })
    expect(make({ size: 0 })).toThrow(
      /topClients\.size: expected an integer from 1 to 10000, got 0/,
    )
    expect(make({ clearKeys: 'yes' })).toThrow(/topClients\.clearKeys: expected a boolean/)
    expect(make({ salt: '' })).toThrow(/topClients\.salt: expected a non-empty string, got ""/)
    expect(make({ sise: 3 })).toThrow(/topClients\.sise: unknown setting/)
    expect(make('big')).toThrow(/topClients: expected an object, got "big"/)
    const limiter = createLimiter({ rules: [byKey] })
    expect(() => limiter.topClients(3 as unknown as string)).toThrow(
      /ruleId: expected a rule id \(a string\), got 3/,
    )
    expect(() => limiter.topClients('per-key', { limit: 0 })).toThrow(/options\.limit/)
    const off = createLimiter({ rules: [byKey], topClients: false })
    expect(() => off.topClients('per-key')).toThrow(/topClients: false/)
  })
})

describe('limiter.counters().byRule', () => {
  it('names only rules that were in force: a refused set adds none of its ids', () => {
    const memory = new MemoryStore()
    // A store that cannot keep bans, and refuses one rule in retain() (as SyncedStore refuses a
    // rule it cannot share).
    const store: Store = {
      synchronous: true,
      consume: (entries, nowMs) => memory.consume(entries, nowMs),
      refund: (entries, nowMs) => memory.refund(entries, nowMs),
      retain: (ids) => {
        if ([...ids].some((id) => id.startsWith('unshared|'))) throw new Error('cannot share it')
        memory.retain(ids)
      },
    }
    const limiter = createLimiter({
      rules: [{ id: 'kept', limit: 5, window: '1m' }],
      store,
      limits: { 'with-fn': () => 3 },
    })
    const refused: RuleInput[][] = [
      [{ id: 'banning', limit: 1, window: '1m', ban: { after: 1, within: '1m', for: '1m' } }],
      [{ id: 'unshared', limit: 1, window: '1m' }],
      [
        {
          id: 'with-fn',
          window: '1m',
          tiers: { by: 'header:x-plan', values: { free: { limit: 1 } }, default: 'free' },
        },
      ],
    ]
    for (const set of refused) {
      expect(() => limiter.updateRules([{ id: 'kept', limit: 5, window: '1m' }, ...set])).toThrow()
      expect(() => limiter.compileRules(set)).toThrow()
    }
    expect([...limiter.counters().byRule.keys()]).toEqual(['kept'])
    limiter.updateRules([
      { id: 'kept', limit: 5, window: '1m' },
      { id: 'later', limit: 1, window: '1m' },
    ])
    expect([...limiter.counters().byRule.keys()]).toEqual(['kept', 'later'])
  })
})

describe('limiter.counters().inFlight', () => {
  it('counts the concurrency slots held, per rule, until release or abandon', async () => {
    const { limiter, check } = clocked([
      { id: 'c', algorithm: 'concurrency', limit: 2 },
      { id: 'q', limit: 1, window: '1m', onLimit: { action: 'queue', maxWait: '2m', maxQueue: 2 } },
    ])
    const first = check()
    const second = check()
    expect(second.action).toBe('queue')
    expect(limiter.counters().inFlight).toEqual(new Map([['c', 2]]))
    limiter.release(first)
    limiter.release(first)
    expect(limiter.counters().inFlight).toEqual(new Map([['c', 1]]))
    const ac = new AbortController()
    const waiting = limiter.waitInQueue(second, ac.signal)
    ac.abort()
    await waiting
    expect(limiter.counters().inFlight).toEqual(new Map())
    limiter.release(second)
    expect(limiter.counters().inFlight).toEqual(new Map())
  })
})

describe('limiter.observe', () => {
  it('reports queue waits by rule, and does not time a synchronous store', () => {
    const { limiter, check } = clocked([
      { id: 'q', limit: 1, window: '1s', onLimit: { action: 'queue', maxWait: '5s', maxQueue: 5 } },
    ])
    const queued = vi.fn()
    const storeCall = vi.fn()
    const stop = limiter.observe({ queued, storeCall })
    check()
    check()
    expect(queued.mock.calls).toEqual([['q', 1000]])
    expect(storeCall).not.toHaveBeenCalled()
    stop()
    check()
    check()
    expect(queued).toHaveBeenCalledTimes(1)
  })

  it('times an asynchronous store, failures included, and survives a throwing observer', async () => {
    const memory = new MemoryStore()
    let fail = false
    const store: Store = {
      consume: (entries, now) => {
        if (fail) return Promise.reject(new Error('down'))
        const results = memory.consume(entries, now).map((r) => ({ ...r }))
        return new Promise((resolve) => setImmediate(() => resolve(results)))
      },
      refund: (entries, now) => memory.refund(entries, now),
    }
    const log = { debug: vi.fn(), info: vi.fn(), warn: vi.fn(), error: vi.fn() }
    const limiter = createLimiter({
      rules: [{ id: 'r', limit: 5, window: '1s' }],
      store,
      logger: { ...log, child: () => log },
    })
    const calls: [number, boolean][] = []
    const stop = limiter.observe({ storeCall: (ms, ok) => calls.push([ms, ok]) })
    limiter.observe({
      storeCall: () => {
        throw new Error('observer bug')
      },
    })
    expect((await limiter.check(facts())).allowed).toBe(true)
    fail = true
    expect((await limiter.check(facts())).failedOpen).toBe(true)
    expect(calls.map(([, ok]) => ok)).toEqual([true, false])
    expect(calls.every(([ms]) => ms >= 0)).toBe(true)
    expect(log.warn).toHaveBeenCalledWith(expect.anything(), 'observer.storeCall threw; ignored')
    stop()
    fail = false
    await limiter.check(facts())
    expect(calls).toHaveLength(2)
  })

  it('times a late answer when it comes, not the deadline', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] })
    try {
      const memory = new MemoryStore()
      const store: Store = {
        consume: (entries, now) => {
          const results = memory.consume(entries, now).map((r) => ({ ...r }))
          return new Promise((resolve) => setTimeout(() => resolve(results), 80))
        },
        refund: (entries, now) => memory.refund(entries, now),
      }
      const limiter = createLimiter({ rules: [{ id: 'r', limit: 5, window: '1s' }], store })
      const storeCall = vi.fn()
      limiter.observe({ storeCall })
      const pending = limiter.check(facts())
      await vi.advanceTimersByTimeAsync(50)
      expect((await pending).failedOpen).toBe(true)
      expect(storeCall).not.toHaveBeenCalled()
      await vi.advanceTimersByTimeAsync(30)
      expect(storeCall).toHaveBeenCalledTimes(1)
      expect(storeCall.mock.calls[0]?.[1]).toBe(true)
    } finally {
      vi.useRealTimers()
    }
  })

  it('ends one subscription per unsubscribe, whatever objects are subscribed how often', () => {
    // A pool of observer objects, subscribed and unsubscribed in any order, some more than
    // once, some unsubscribed twice: each object is told of a queued request once per
    // subscription still open.
    const op = fc.oneof(
      fc.record({ sub: fc.integer({ min: 0, max: 2 }) }),
      fc.record({ unsub: fc.nat({ max: 20 }) }),
    )
    fc.assert(
      fc.property(fc.array(op, { maxLength: 30 }), (ops) => {
        const { limiter, check } = clocked([
          {
            id: 'q',
            limit: 1,
            window: '1s',
            onLimit: { action: 'queue', maxWait: '5s', maxQueue: 5 },
          },
        ])
        const calls = [0, 0, 0]
        const pool = calls.map((_, i) => ({ queued: () => void calls[i]!++ }))
        const subs: { of: number; stop: () => void; open: boolean }[] = []
        for (const o of ops) {
          if ('sub' in o) subs.push({ of: o.sub, stop: limiter.observe(pool[o.sub]!), open: true })
          else if (subs.length > 0) {
            const s = subs[o.unsub % subs.length]!
            s.stop()
            s.open = false
          }
        }
        check()
        check()
        const open = calls.map((_, i) => subs.filter((s) => s.open && s.of === i).length)
        expect(calls).toEqual(open)
      }),
    )
  })

  it('catches a rejected promise from an async observer or onDecision, like a throw', async () => {
    const memory = new MemoryStore()
    const store: Store = {
      consume: (entries, now) =>
        Promise.resolve(memory.consume(entries, now).map((r) => ({ ...r }))),
      refund: (entries, now) => memory.refund(entries, now),
    }
    const log = { debug: vi.fn(), info: vi.fn(), warn: vi.fn(), error: vi.fn() }
    const unhandled: unknown[] = []
    const onUnhandled = (reason: unknown): void => void unhandled.push(reason)
    process.on('unhandledRejection', onUnhandled)
    try {
      const limiter = createLimiter({
        rules: [
          {
            id: 'q',
            limit: 1,
            window: '1s',
            onLimit: { action: 'queue', maxWait: '5s', maxQueue: 5 },
          },
        ],
        store,
        logger: { ...log, child: () => log },
        // An async callback where a void one is typed: the case under test.
        // eslint-disable-next-line @typescript-eslint/no-misused-promises, @typescript-eslint/require-await
        onDecision: async () => {
          throw new Error('audit sink down')
        },
      })
      limiter.observe({
        // eslint-disable-next-line @typescript-eslint/no-misused-promises
        queued: async () => Promise.reject(new Error('queued bug')),
        // A thenable that is not a Promise is caught too.
        storeCall: () =>
          ({
            then: (_: unknown, reject: (e: unknown) => void) => reject(new Error('store bug')),
          }) as never,
      })
      expect((await limiter.check(facts())).allowed).toBe(true)
      expect((await limiter.check(facts())).action).toBe('queue')
      await new Promise((resolve) => setImmediate(resolve))
      await new Promise((resolve) => setImmediate(resolve))
      expect(unhandled).toEqual([])
      const messages = log.warn.mock.calls.map(([, m]) => m as string)
      expect(messages).toContain('onDecision rejected; ignored')
      expect(messages).toContain('observer.queued rejected; ignored')
      expect(messages).toContain('observer.storeCall rejected; ignored')
    } finally {
      process.off('unhandledRejection', onUnhandled)
    }
  })

  it('refuses an observer that is not an object of functions', () => {
    const limiter = createLimiter()
    expect(() => limiter.observe(undefined as never)).toThrow(/observer: expected an object/)
    expect(() => limiter.observe({ queued: 1 } as never)).toThrow(
      /observer\.queued: expected a function, got 1/,
    )
  })
})
