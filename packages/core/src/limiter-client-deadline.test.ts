import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest'
import { createLimiter, type LimiterOptions } from './limiter.js'
import type { Logger } from './logger.js'
import { MemoryStore } from './stores/memory-store.js'
import type { Store } from './stores/store.js'

const never = <T>(): Promise<T> => new Promise<T>(() => {})

/** A MemoryStore whose every call but `consume` never answers. */
function silentStore(): Store {
  const memory = new MemoryStore()
  return {
    consume: (entries, now) => memory.consume(entries, now),
    refund: () => never(),
    peek: () => never(),
    reset: () => never(),
    penalize: () => never(),
    close: () => never(),
  }
}

const RULE = { id: 'r', algorithm: 'token-bucket', limit: 5, window: '1m' } as const

function logger() {
  const log = { debug: vi.fn(), info: vi.fn(), warn: vi.fn(), error: vi.fn() }
  return log satisfies Logger
}

/** Whether `p` has settled, after running the microtasks queued so far. */
async function settled(p: Promise<unknown>): Promise<boolean> {
  let done = false
  p.then(
    () => (done = true),
    () => (done = true),
  )
  await vi.advanceTimersByTimeAsync(0)
  return done
}

beforeEach(() => {
  vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'setInterval', 'clearInterval'] })
})

afterEach(() => {
  vi.useRealTimers()
})

describe('the calls about one client, against a store that never answers', () => {
  const calls = {
    get: (l: ReturnType<typeof createLimiter>) => l.get('203.0.113.7'),
    reset: (l: ReturnType<typeof createLimiter>) => l.reset('203.0.113.7'),
    penalty: (l: ReturnType<typeof createLimiter>) => l.penalty('203.0.113.7', 2),
    reward: (l: ReturnType<typeof createLimiter>) => l.reward('203.0.113.7', 2),
  }

  for (const [op, call] of Object.entries(calls)) {
    it(`${op}() rejects with FG_ERR_STORE_TIMEOUT naming ${op} and stateTimeoutMs, at 20 × decisionTimeoutMs by default`, async () => {
      const limiter = createLimiter({ rules: [RULE], store: silentStore() })
      const p = call(limiter)
      await vi.advanceTimersByTimeAsync(999)
      expect(await settled(p)).toBe(false)
      await vi.advanceTimersByTimeAsync(1)
      await expect(p).rejects.toMatchObject({
        code: 'FG_ERR_STORE_TIMEOUT',
        message: expect.stringContaining(
          `limiter.${op}: the store did not answer within stateTimeoutMs (1000 ms)`,
        ) as unknown,
      })
    })
  }

  it('the deadline follows stateTimeoutMs, else decisionTimeoutMs', async () => {
    for (const [options, ms] of [
      [{ stateTimeoutMs: 250 }, 250],
      [{ decisionTimeoutMs: 10 }, 200],
      [{ decisionTimeoutMs: 10, stateTimeoutMs: 30 }, 30],
    ] as [LimiterOptions, number][]) {
      const limiter = createLimiter({ rules: [RULE], store: silentStore(), ...options })
      const p = limiter.reset('203.0.113.7')
      await vi.advanceTimersByTimeAsync(ms - 1)
      expect(await settled(p)).toBe(false)
      await vi.advanceTimersByTimeAsync(1)
      await expect(p).rejects.toMatchObject({ code: 'FG_ERR_STORE_TIMEOUT' })
    }
  })

  it('a penalty or reward that timed out says it may or may not have been applied', async () => {
    const limiter = createLimiter({ rules: [RULE], store: silentStore() })
    const p = expect(limiter.penalty('203.0.113.7', 1)).rejects.toThrow(
      /may or may not have been applied/,
    )
    const r = expect(limiter.reward('203.0.113.7', 1)).rejects.toThrow(
      /may or may not have been applied/,
    )
    await vi.advanceTimersByTimeAsync(1000)
    await p
    await r
  })

  it('refuses a stateTimeoutMs that is not a positive whole number, naming it', () => {
    expect(() => createLimiter({ stateTimeoutMs: 0 })).toThrow(/stateTimeoutMs/)
    expect(() => createLimiter({ closeTimeoutMs: -1 })).toThrow(/closeTimeoutMs/)
  })
})

describe('close(), against a store that never answers', () => {
  it('settles within closeTimeoutMs (10 s by default) when store.close() never settles, and logs what it gave up on', async () => {
    const log = logger()
    const limiter = createLimiter({ rules: [RULE], store: silentStore(), logger: log })
    const p = limiter.close()
    await vi.advanceTimersByTimeAsync(9_999)
    expect(await settled(p)).toBe(false)
    await vi.advanceTimersByTimeAsync(1)
    await expect(p).resolves.toBeUndefined()
    expect(log.warn).toHaveBeenCalledWith(
      expect.objectContaining({ code: 'FG_ERR_STORE_TIMEOUT', gaveUpOn: ['store.close()'] }),
      expect.stringMatching(/close\(\) gave up waiting/),
    )
  })

  it('settles within closeTimeoutMs when the give-back of queued reservations never settles, and still closes the store', async () => {
    const log = logger()
    const memory = new MemoryStore()
    const close = vi.fn()
    const store: Store = {
      synchronous: true,
      consume: (entries, now) => memory.consume(entries, now),
      refund: () => never(),
      close,
    }
    const limiter = createLimiter({
      rules: [
        {
          id: 'q',
          limit: 1,
          window: '1s',
          onLimit: { action: 'queue', maxWait: '5s', maxQueue: 3 },
        },
      ],
      store,
      logger: log,
      closeTimeoutMs: 500,
    })
    const facts = { method: 'GET', path: '/', ip: '203.0.113.7', headers: {} }
    await limiter.check(facts)
    const queued = await limiter.check(facts)
    expect(queued.action).toBe('queue')
    const wait = limiter.waitInQueue(queued)
    const p = limiter.close()
    await expect(wait).resolves.toBe(false)
    await vi.advanceTimersByTimeAsync(500)
    await expect(p).resolves.toBeUndefined()
    expect(close).toHaveBeenCalledTimes(1)
    expect(log.warn).toHaveBeenCalledWith(
      expect.objectContaining({
        gaveUpOn: ['the store taking back what queued requests reserved'],
      }),
      expect.any(String),
    )
  })

  it('a second close() returns the same settlement and closes the store once', async () => {
    const close = vi.fn()
    const limiter = createLimiter({ rules: [RULE], store: { ...silentStore(), close } })
    const a = limiter.close()
    const b = limiter.close()
    await a
    await b
    expect(close).toHaveBeenCalledTimes(1)
  })
})
