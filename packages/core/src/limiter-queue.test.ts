import fc from 'fast-check'
import { describe, expect, it, vi } from 'vitest'
import type { Decision } from './decision.js'
import { createLimiter } from './limiter.js'
import type { RequestFacts } from './request-facts.js'
import type { RuleInput } from './rules/schema.js'
import { MemoryStore } from './stores/memory-store.js'
import type { Store } from './stores/store.js'
import { asyncMemoryStore } from './testing/async-memory-store.js'

const facts = (cost = 1): RequestFacts => ({
  method: 'GET',
  path: '/',
  ip: '203.0.113.7',
  headers: {},
  cost,
})

const queueRule = (over: Partial<RuleInput> = {}): RuleInput => ({
  id: 'q',
  limit: 1,
  window: '1s',
  onLimit: { action: 'queue', maxWait: '5s', maxQueue: 1 },
  ...over,
})

describe('queue places', () => {
  for (const [name, makeStore] of [
    ['MemoryStore', () => new MemoryStore()],
    ['an asynchronous store', asyncMemoryStore],
  ] as const) {
    it(`with ${name}, two concurrent requests of one client and maxQueue 1: the first passes, the second waits`, async () => {
      const limiter = createLimiter({ rules: [queueRule()], store: makeStore(), clock: () => 0 })
      const [a, b] = await Promise.all([limiter.check(facts()), limiter.check(facts())])
      expect([a.action, b.action]).toEqual(['allow', 'queue'])
      expect(b.waitMs).toBe(1000)
      // The queue of one is full: a third is refused, and its reservation given back.
      const c = await limiter.check(facts())
      expect(c).toMatchObject({ action: 'reject', retryAfterMs: 2000 })
      const gone = new AbortController()
      const waiting = limiter.waitInQueue(b, gone.signal)
      gone.abort()
      expect(await waiting).toBe(false)
      // Both reservations are back: the next one waits one window, not two or three.
      expect(await limiter.check(facts())).toMatchObject({ action: 'queue', waitMs: 1000 })
    })
  }

  it('a leaky-bucket shaper whose queue is full refuses; it does not let a request pass ahead of the one waiting', () => {
    const limiter = createLimiter({
      rules: [queueRule({ algorithm: 'leaky-bucket', limit: 5, burst: 4 })],
      clock: () => 0,
    })
    expect(limiter.check(facts())).toMatchObject({ action: 'allow' })
    expect(limiter.check(facts())).toMatchObject({ action: 'queue', waitMs: 200 })
    expect(limiter.check(facts())).toMatchObject({ action: 'reject', retryAfterMs: 400 })
  })
})

describe('queueing does not depend on whether the store answers synchronously', () => {
  const reserving = ['token-bucket', 'gcra', 'fixed-window', 'leaky-bucket'] as const

  it('the same requests get the same decisions from a synchronous and an asynchronous store', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom(...reserving),
        fc.integer({ min: 1, max: 4 }),
        fc.integer({ min: 1, max: 3 }),
        fc.integer({ min: 100, max: 3000 }),
        fc.array(
          fc.record({
            advanceMs: fc.integer({ min: 0, max: 700 }),
            // Requests sent together: concurrent for the asynchronous store.
            costs: fc.array(fc.integer({ min: 1, max: 3 }), { minLength: 1, maxLength: 3 }),
            // Queued clients leave at once (their place and reservation are given back), or
            // wait their turn.
            leave: fc.boolean(),
          }),
          { minLength: 1, maxLength: 12 },
        ),
        async (algorithm, limit, maxQueue, maxWaitMs, steps) => {
          let now = 1_000_000
          const rules: RuleInput[] = [
            {
              id: 'q',
              algorithm,
              limit,
              window: '1s',
              onLimit: { action: 'queue', maxWait: maxWaitMs, maxQueue },
            },
          ]
          const sync = createLimiter({ rules, store: new MemoryStore(), clock: () => now })
          const later = createLimiter({ rules, store: asyncMemoryStore(), clock: () => now })
          // A refusal's retry hint may differ: concurrent requests see each other's
          // reservations, including one given back once its answer finds the queue full.
          const seen = (d: Decision) => (d.allowed ? [d.action, d.waitMs, d.remaining] : [d.action])
          vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] })
          try {
            for (const step of steps) {
              now += step.advanceMs
              // Queued requests whose wait is over leave their queue.
              vi.advanceTimersByTime(step.advanceMs)
              const a = step.costs.map((c) => sync.check(facts(c)) as Decision)
              const b = await Promise.all(
                step.costs.map((c) => Promise.resolve(later.check(facts(c)))),
              )
              expect(b.map(seen)).toEqual(a.map(seen))
              for (const [limiter, decisions] of [
                [sync, a],
                [later, b],
              ] as const) {
                for (const d of decisions) {
                  const gone = new AbortController()
                  if (step.leave) gone.abort()
                  void limiter.waitInQueue(d, gone.signal)
                }
              }
            }
          } finally {
            vi.useRealTimers()
          }
        },
      ),
      { numRuns: 300 },
    )
  })
})

describe('a client whose queue is already full costs the store no reservation', () => {
  const reserving = ['token-bucket', 'gcra', 'fixed-window', 'leaky-bucket'] as const

  /** A MemoryStore that counts its calls, and (as a store unaware of full queues) may drop the flag. */
  function counted(ignoreQueueFull: boolean) {
    const memory = new MemoryStore()
    const calls = { consume: 0, refund: 0 }
    const store: Store = {
      synchronous: true,
      consume: (entries, now) => {
        calls.consume++
        const asked = ignoreQueueFull ? entries.map((e) => ({ ...e, queueFull: false })) : entries
        return memory.consume(asked, now)
      },
      refund: (entries, now) => {
        calls.refund++
        memory.refund(entries, now)
      },
    }
    return { store, calls }
  }

  // Everything a decision says but its rules (each limiter compiles its own) and its lease.
  const seen = ({ rule, outcomes, ...d }: Decision): unknown =>
    JSON.parse(
      JSON.stringify({
        ...d,
        rule: rule?.id,
        outcomes: outcomes.map((o) => ({ ...o, rule: o.rule.id })),
      }),
    )

  it('one store call per request and the same decisions as reserving then giving back (property)', () => {
    fc.assert(
      fc.property(
        fc.constantFrom(...reserving),
        fc.integer({ min: 1, max: 4 }),
        fc.integer({ min: 1, max: 3 }),
        fc.integer({ min: 100, max: 3000 }),
        fc.boolean(),
        fc.array(
          fc.record({
            advanceMs: fc.integer({ min: 0, max: 700 }),
            cost: fc.integer({ min: 1, max: 3 }),
          }),
          { minLength: 1, maxLength: 20 },
        ),
        (algorithm, limit, maxQueue, maxWaitMs, withShadow, steps) => {
          let now = 1_000_000
          const rules: RuleInput[] = [
            {
              id: 'q',
              algorithm,
              limit,
              window: '1s',
              onLimit: { action: 'queue', maxWait: maxWaitMs, maxQueue },
            },
          ]
          // A shadow rule beside it: the request is decided by two entries at once.
          if (withShadow) rules.push({ ...rules[0]!, id: 's', shadow: true, limit: 1 })
          const fresh = counted(false)
          const old = counted(true)
          const limiter = createLimiter({ rules, store: fresh.store, clock: () => now })
          const reference = createLimiter({ rules, store: old.store, clock: () => now })
          vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] })
          try {
            for (const [i, step] of steps.entries()) {
              now += step.advanceMs
              // Queued requests whose wait is over leave their queue.
              vi.advanceTimersByTime(step.advanceMs)
              const got = limiter.check(facts(step.cost)) as Decision
              const want = reference.check(facts(step.cost)) as Decision
              expect(seen(got), `request ${i}`).toEqual(seen(want))
              expect(fresh.calls.consume, `request ${i}`).toBe(i + 1)
              for (const [l, d] of [
                [limiter, got],
                [reference, want],
              ] as const) {
                void l.waitInQueue(d, new AbortController().signal)
              }
            }
            // Nothing was reserved to be given back.
            expect(fresh.calls.refund).toBe(0)
          } finally {
            vi.useRealTimers()
          }
        },
      ),
      { numRuns: 300 },
    )
  })
})

describe('a queued decision nobody waits for or releases', () => {
  it('gives its queue place back once its wait and a grace of 1 s are over, and only once whatever the caller does later (property)', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 1, max: 3 }),
        fc.array(fc.constantFrom('nothing', 'release', 'abandoned', 'wait'), {
          minLength: 3,
          maxLength: 3,
        }),
        async (maxQueue, late) => {
          vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] })
          try {
            let now = 0
            const limiter = createLimiter({
              rules: [queueRule({ onLimit: { action: 'queue', maxWait: '10s', maxQueue } })],
              clock: () => now,
            })
            const take = (): Decision => limiter.check(facts()) as Decision
            expect(take().action).toBe('allow')
            const left: Decision[] = []
            for (let i = 0; i < maxQueue; i++) left.push(take())
            expect(left.map((d) => d.action)).toEqual(left.map(() => 'queue'))
            // Left alone: neither waited for nor released.
            const after = Math.max(...left.map((d) => d.waitMs)) + 1000
            now += after
            vi.advanceTimersByTime(after)
            expect(take().action).toBe('allow')
            const queued: Decision[] = []
            for (let i = 0; i < maxQueue; i++) queued.push(take())
            expect(queued.map((d) => d.action)).toEqual(queued.map(() => 'queue'))
            // A late release or wait of the old decisions frees nothing a second time.
            const waits: Promise<boolean>[] = []
            left.forEach((d, i) => {
              const what = late[i]
              if (what === 'release') limiter.release(d)
              else if (what === 'abandoned') limiter.release(d, 'abandoned')
              else if (what === 'wait') waits.push(limiter.waitInQueue(d))
            })
            expect(take()).toMatchObject({ action: 'reject' })
            for (const d of queued) limiter.release(d)
            vi.runAllTimers()
            await Promise.all(waits)
            await limiter.close()
          } finally {
            vi.useRealTimers()
          }
        },
      ),
      { numRuns: 60 },
    )
  })
})

describe('queue timers near the 2^31-1 ms ceiling of setTimeout', () => {
  const MAX = 2 ** 31 - 1
  const reserving = ['token-bucket', 'gcra', 'fixed-window', 'leaky-bucket'] as const

  /** The queue places the limiter holds now (a white-box read). */
  const placesOf = (limiter: unknown): number => {
    const queued = (limiter as { holdings: { queued: Map<string, number> } }).holdings.queued
    return [...queued.values()].reduce((a, b) => a + b, 0)
  }

  it('a queued request keeps its place until its wait is over, and its wait ends when it says, whatever the wait (property)', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom(...reserving),
        // Windows (and the longest waits) up to the ceiling, most of them within a grace of it.
        fc.oneof(fc.integer({ min: MAX - 5000, max: MAX }), fc.integer({ min: 1000, max: MAX })),
        fc.integer({ min: 1, max: 3 }),
        // How much of a window the queued request's cost is, and when (as a share of its wait
        // and grace) the place and the wait are looked at.
        fc.double({ min: 0.5, max: 1, noNaN: true }),
        fc.double({ min: 0, max: 1.2, noNaN: true }),
        fc.boolean(),
        async (algorithm, windowMs, limit, share, at, waits) => {
          vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] })
          try {
            const limiter = createLimiter({
              rules: [
                {
                  id: 'q',
                  algorithm,
                  limit,
                  window: windowMs,
                  onLimit: { action: 'queue', maxWait: windowMs, maxQueue: 1 },
                },
              ],
              clock: () => 0,
            })
            expect((limiter.check(facts(limit)) as Decision).action).toBe('allow')
            const queued = limiter.check(facts(limit * share)) as Decision
            if (queued.action !== 'queue') return
            let admitted: boolean | undefined
            if (waits) void limiter.waitInQueue(queued).then((ok) => (admitted = ok))
            const t = Math.floor((queued.waitMs + 1000) * at)
            vi.advanceTimersByTime(t)
            await Promise.resolve()
            if (t < queued.waitMs) {
              expect(placesOf(limiter), `place at ${t} ms of a ${queued.waitMs} ms wait`).toBe(1)
              expect(admitted).toBeUndefined()
            }
            if (waits && t >= queued.waitMs) expect(admitted).toBe(true)
            if (t >= queued.waitMs + 1000) expect(placesOf(limiter)).toBe(0)
            vi.runAllTimers()
            await limiter.close()
          } finally {
            vi.useRealTimers()
          }
        },
      ),
      { numRuns: 300 },
    )
  })
})

describe('a queued request waited for with more than one signal', () => {
  it('a signal aborted once the request is being served frees nothing, and a later wait resolves true at once', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] })
    try {
      const limiter = createLimiter({
        rules: [
          { id: 'c', algorithm: 'concurrency', limit: 1 },
          { ...queueRule(), onLimit: { action: 'queue', maxWait: '5s', maxQueue: 5 } },
        ],
        clock: () => 0,
      })
      limiter.release(limiter.check(facts()) as Decision)
      const queued = limiter.check(facts()) as Decision
      expect(queued).toMatchObject({ action: 'queue', waitMs: 1000 })
      const [first, second, third] = [0, 1, 2].map(() => new AbortController())
      const waits = [
        limiter.waitInQueue(queued, first!.signal),
        limiter.waitInQueue(queued, second!.signal),
      ]
      vi.advanceTimersByTime(1000)
      expect(await Promise.all(waits)).toEqual([true, true])
      // Being served: no signal ends it now (before the fix, the second one freed its slot).
      second!.abort()
      expect(limiter.counters().inFlight.get('c')).toBe(1)
      // Its turn has come: a later wait neither waits again nor can be ended by its signal.
      const late = limiter.waitInQueue(queued, third!.signal)
      third!.abort()
      expect(await late).toBe(true)
      expect(limiter.counters().inFlight.get('c')).toBe(1)
      expect((limiter.check(facts()) as Decision).outcomes[0]!.allowed).toBe(false)
      limiter.release(queued)
      expect(limiter.counters().inFlight.get('c') ?? 0).toBe(0)
      expect(vi.getTimerCount()).toBe(0)
    } finally {
      vi.useRealTimers()
    }
  })
})
