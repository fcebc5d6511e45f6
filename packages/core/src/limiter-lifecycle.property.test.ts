import fc from 'fast-check'
import { describe, expect, it, vi } from 'vitest'
import type { Decision } from './decision.js'
import { createLimiter } from './limiter.js'
import type { RequestFacts } from './request-facts.js'
import type { RuleInput } from './rules/schema.js'
import { MemoryStore } from './stores/memory-store.js'
import type { Store } from './stores/store.js'
import { collectUnhandledRejections } from './testing/unhandled-rejections.js'

const facts = (ip: string, cost: number): RequestFacts => ({
  method: 'GET',
  path: '/',
  ip,
  headers: {},
  cost,
})

type Op =
  | { readonly op: 'check'; readonly client: number; readonly cost: number }
  | { readonly op: 'leave'; readonly pick: number }
  | { readonly op: 'leaveAsAdmitted'; readonly pick: number }
  | { readonly op: 'advance'; readonly ms: number }
  | { readonly op: 'swap' }
  | { readonly op: 'close' }

const opArb: fc.Arbitrary<Op> = fc.oneof(
  {
    weight: 5,
    arbitrary: fc.record({
      op: fc.constant('check' as const),
      client: fc.nat(1),
      cost: fc.integer({ min: 1, max: 2 }),
    }),
  },
  { weight: 2, arbitrary: fc.record({ op: fc.constant('leave' as const), pick: fc.nat() }) },
  {
    weight: 2,
    arbitrary: fc.record({ op: fc.constant('leaveAsAdmitted' as const), pick: fc.nat() }),
  },
  {
    weight: 3,
    arbitrary: fc.record({
      op: fc.constant('advance' as const),
      ms: fc.integer({ min: 0, max: 1500 }),
    }),
  },
  { weight: 1, arbitrary: fc.constant({ op: 'swap' as const }) },
  { weight: 1, arbitrary: fc.constant({ op: 'close' as const }) },
)

/** A request that queued, and how its wait went. */
interface Queued {
  readonly decision: Decision
  readonly leave: AbortController
  /** The units it reserved: its cost (the rule's own cost is 1). */
  readonly cost: number
  state: 'waiting' | 'admitted' | 'refused'
  abandoned: boolean
}

describe('a limiter with queued requests, over random interleavings with close(), leaving clients and rule swaps', () => {
  const unhandled = collectUnhandledRejections()

  it('settles every wait, leaves no timer after close(), and every unit reserved is either used or given back once', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom('token-bucket', 'gcra', 'fixed-window', 'leaky-bucket'),
        fc.integer({ min: 1, max: 3 }),
        fc.array(opArb, { minLength: 1, maxLength: 30 }),
        async (algorithm, maxQueue, ops) => {
          vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] })
          try {
            let now = 1_000_000
            const memory = new MemoryStore()
            let reserved = 0
            let refunded = 0
            // Counts what reaches the store: reservations (a wait) and refunds.
            const store: Store = {
              synchronous: true,
              consume: (entries, nowMs) => {
                const results = memory.consume(entries, nowMs)
                entries.forEach((e, i) => {
                  const r = results[i]!
                  if (r.allowed && r.waitMs > 0) reserved += e.cost
                })
                return results
              },
              refund: (entries, nowMs) => {
                for (const e of entries) refunded += e.cost
                memory.refund(entries, nowMs)
              },
              retain: (ids) => memory.retain(ids),
              close: () => memory.close(),
            }
            const q: RuleInput = {
              id: 'q',
              algorithm,
              limit: 2,
              window: '1s',
              onLimit: { action: 'queue', maxWait: '3s', maxQueue },
            }
            // The swap keeps 'q' unchanged, so its state (and what waits in it) stays.
            const sets: RuleInput[][] = [
              [q],
              [q, { id: 'other', match: 'POST /x', limit: 1, window: '1s' }],
            ]
            let set = 0
            const limiter = createLimiter({ rules: sets[0]!, store, clock: () => now })
            const queued: Queued[] = []
            let closed = false
            const pick = (i: number): Queued | undefined =>
              queued.length === 0 ? undefined : queued[i % queued.length]
            for (const step of ops) {
              switch (step.op) {
                case 'check': {
                  const d = limiter.check(facts(`192.0.2.${step.client}`, step.cost)) as Decision
                  if (closed) expect(d.failedOpen).toBe(true)
                  if (d.action !== 'queue') break
                  const entry: Queued = {
                    decision: d,
                    leave: new AbortController(),
                    cost: step.cost,
                    state: 'waiting',
                    abandoned: false,
                  }
                  queued.push(entry)
                  void limiter.waitInQueue(d, entry.leave.signal).then((ok) => {
                    entry.state = ok ? 'admitted' : 'refused'
                  })
                  break
                }
                case 'leave':
                  pick(step.pick)?.leave.abort()
                  break
                case 'leaveAsAdmitted': {
                  // The adapter's release of a request whose client left as (or after) its wait
                  // ended, before its handler ran.
                  const entry = pick(step.pick)
                  if (entry === undefined) break
                  // After close() nothing goes back to the store: what it used stays used.
                  if (!closed) entry.abandoned = true
                  limiter.release(entry.decision, 'abandoned')
                  break
                }
                case 'advance':
                  now += step.ms
                  vi.advanceTimersByTime(step.ms)
                  break
                case 'swap':
                  set = 1 - set
                  limiter.updateRules(sets[set]!)
                  break
                case 'close':
                  if (!closed) await limiter.close()
                  closed = true
                  break
              }
              // Let settled waits report before the next step.
              await Promise.resolve()
            }
            if (!closed) await limiter.close()
            await Promise.resolve()
            expect(queued.filter((e) => e.state === 'waiting')).toEqual([])
            expect(vi.getTimerCount()).toBe(0)
            const used = queued
              .filter((e) => e.state === 'admitted' && !e.abandoned)
              .reduce((sum, e) => sum + e.cost, 0)
            expect(reserved).toBe(used + refunded)
            expect(unhandled).toEqual([])
          } finally {
            vi.useRealTimers()
          }
        },
      ),
      { numRuns: 300 },
    )
  })
})
