import { afterEach, describe, expect, it, vi } from 'vitest'
import type { Decision } from './decision.js'
import { createLimiter } from './limiter.js'
import type { Logger } from './logger.js'
import type { RequestFacts } from './request-facts.js'
import type { RuleInput } from './rules/schema.js'
import { MemoryStore } from './stores/memory-store.js'
import type { RefundEntry, Store } from './stores/store.js'

const facts = (cost = 1): RequestFacts => ({
  method: 'GET',
  path: '/',
  ip: '203.0.113.7',
  headers: {},
  cost,
})

const queueRule: RuleInput = {
  id: 'q',
  limit: 1,
  window: '1s',
  onLimit: { action: 'queue', maxWait: '5s', maxQueue: 3 },
}

/** A MemoryStore that records the order of its calls, and refuses every call once closed. */
function journaledStore(): { store: Store; calls: string[]; memory: MemoryStore } {
  const memory = new MemoryStore()
  const calls: string[] = []
  let closed = false
  const guard = (name: string): void => {
    calls.push(name)
    if (closed) throw new Error(`${name} on a closed store`)
  }
  const store: Store = {
    synchronous: true,
    consume: (entries, now) => {
      guard('consume')
      return memory.consume(entries, now)
    },
    refund: (entries: readonly RefundEntry[], now) => {
      guard(`refund ${entries.map((e) => e.cost).join(',')}`)
      memory.refund(entries, now)
    },
    close: () => {
      calls.push('close')
      closed = true
    },
  }
  return { store, calls, memory }
}

const quietLogger = (): Logger & { lines: unknown[] } => {
  const lines: unknown[] = []
  const log = (obj: unknown, msg?: string): void => void lines.push([obj, msg])
  return { lines, debug: log, info: log, warn: log, error: log }
}

afterEach(() => {
  vi.useRealTimers()
})

describe('close()', () => {
  it('ends every queued wait at once (false), gives their units back before the store closes, and logs nothing', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] })
    const { store, calls } = journaledStore()
    const logger = quietLogger()
    const limiter = createLimiter({ rules: [queueRule], store, clock: () => 0, logger })
    expect((limiter.check(facts()) as Decision).action).toBe('allow')
    const a = limiter.check(facts()) as Decision
    const b = limiter.check(facts()) as Decision
    expect([a.action, b.action]).toEqual(['queue', 'queue'])
    const waits = [limiter.waitInQueue(a), limiter.waitInQueue(b)]
    expect(vi.getTimerCount()).toBe(2)
    await limiter.close()
    expect(await Promise.all(waits)).toEqual([false, false])
    expect(vi.getTimerCount()).toBe(0)
    // One refund of both reservations, then close; nothing after.
    expect(calls).toEqual(['consume', 'consume', 'consume', 'refund 1,1', 'close'])
    // Released later (as the adapters do when the response closes): nothing more is sent.
    limiter.release(a, 'abandoned')
    limiter.release(b)
    expect(logger.lines).toEqual([])
    expect(calls.at(-1)).toBe('close')
  })

  it('a queued decision waited for only after close() is refused, and nothing reaches the closed store', async () => {
    const { store, calls } = journaledStore()
    const logger = quietLogger()
    const limiter = createLimiter({ rules: [queueRule], store, clock: () => 0, logger })
    void limiter.check(facts())
    const queued = limiter.check(facts()) as Decision
    await limiter.close()
    expect(await limiter.waitInQueue(queued)).toBe(false)
    expect(calls.at(-1)).toBe('close')
    expect(logger.lines).toEqual([])
  })

  it('a concurrency slot held at close() is not sent back to the closed store, and its release logs nothing', async () => {
    const { store, calls } = journaledStore()
    const logger = quietLogger()
    const limiter = createLimiter({
      rules: [{ id: 'c', algorithm: 'concurrency', limit: 1 }],
      store,
      clock: () => 0,
      logger,
    })
    const held = limiter.check(facts()) as Decision
    expect(held.action).toBe('allow')
    await limiter.close()
    limiter.release(held, 'succeeded')
    expect(calls).toEqual(['consume', 'close'])
    expect(logger.lines).toEqual([])
  })

  it('check() and limit() after close() pass unjudged without a store call (FG_WRN_LIMITER_CLOSED)', async () => {
    const { store, calls } = journaledStore()
    const logger = quietLogger()
    const limiter = createLimiter({ rules: [queueRule], store, clock: () => 0, logger })
    await limiter.close()
    expect(limiter.check(facts())).toMatchObject({ allowed: true, failedOpen: true })
    expect(limiter.limit('203.0.113.7', { rule: 'q' })).toMatchObject({
      allowed: true,
      failedOpen: true,
    })
    expect(calls).toEqual(['close'])
    expect(limiter.counters().total.failedOpen).toBe(2)
    expect(JSON.stringify(logger.lines)).toContain('FG_WRN_LIMITER_CLOSED')
  })
})

describe('a queued request that is not served gives back every unit reserved for it', () => {
  const rules: RuleInput[] = [
    { ...queueRule, onLimit: { action: 'queue', maxWait: '5s', maxQueue: 1 } },
  ]

  it('released as abandoned right as its wait ends (the client left at that moment)', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] })
    let now = 0
    const limiter = createLimiter({ rules, store: new MemoryStore(), clock: () => now })
    void limiter.check(facts())
    const queued = limiter.check(facts()) as Decision
    expect(queued).toMatchObject({ action: 'queue', waitMs: 1000 })
    const waiting = limiter.waitInQueue(queued, new AbortController().signal)
    now += 1000
    vi.advanceTimersByTime(1000)
    // The wait is over (admitted), and the client's connection closes before the handler
    // runs: the adapter releases the request as abandoned.
    expect(await waiting).toBe(true)
    limiter.release(queued, 'abandoned')
    // Its reserved unit is back: the next request passes at once instead of waiting a window.
    expect(limiter.check(facts())).toMatchObject({ action: 'allow' })
  })

  it('released while still waiting, with any outcome (the adapter releases what it holds when the response closes)', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] })
    const limiter = createLimiter({
      rules: [...rules, { id: 'c', algorithm: 'concurrency', limit: 5 }],
      store: new MemoryStore(),
      clock: () => 0,
    })
    void limiter.check(facts())
    const queued = limiter.check(facts()) as Decision
    expect(queued.action).toBe('queue')
    const waiting = limiter.waitInQueue(queued)
    limiter.release(queued, 'failed')
    expect(await waiting).toBe(false)
    expect(vi.getTimerCount()).toBe(0)
    // The unit reserved in 'q' and the slot in 'c' are both back.
    expect(limiter.check(facts())).toMatchObject({ action: 'queue', waitMs: 1000 })
    expect(limiter.counters().inFlight.get('c')).toBe(2)
  })
})
