import fc from 'fast-check'
import { describe, expect, it, vi } from 'vitest'
import type { Decision } from './decision.js'
import { createLimiter } from './limiter.js'
import type { RequestFacts } from './request-facts.js'
import type { RuleInput } from './rules/schema.js'
import { MemoryStore } from './stores/memory-store.js'
import type { RefundEntry, Store } from './stores/store.js'

const facts = (ip = '203.0.113.7'): RequestFacts => ({ method: 'GET', path: '/', ip, headers: {} })

function sync(d: Decision | Promise<Decision>): Decision {
  if (d instanceof Promise) throw new Error('expected a synchronous decision')
  return d
}

const slots: RuleInput = { id: 'slots', algorithm: 'concurrency', limit: 2 }
const other: RuleInput = { id: 'other', match: false, limit: 5, window: '1s' }

describe('a rule that leaves and comes back: what the old requests hold stays with the state that left', () => {
  it('property: the concurrency slots held never exceed the limit, whatever the releases and swaps', () => {
    type Op =
      | { readonly op: 'check' }
      | { readonly op: 'release'; readonly which: number }
      | { readonly op: 'remove' }
      | { readonly op: 'add' }
      | { readonly op: 'same' }
    const op: fc.Arbitrary<Op> = fc.oneof(
      { weight: 4, arbitrary: fc.constant({ op: 'check' as const }) },
      { weight: 4, arbitrary: fc.nat(20).map((which) => ({ op: 'release' as const, which })) },
      { weight: 2, arbitrary: fc.constant({ op: 'remove' as const }) },
      { weight: 2, arbitrary: fc.constant({ op: 'add' as const }) },
      fc.constant({ op: 'same' as const }),
    )
    fc.assert(
      fc.property(fc.array(op, { maxLength: 60, size: 'max' }), (ops) => {
        const limiter = createLimiter({ rules: [slots, other], clock: () => 0 })
        // The model: the requests holding a slot of the state in force, and each admitted
        // request's life of that state.
        let inForce = true
        let life = 0
        let held = 0
        const admitted: { readonly d: Decision; readonly life: number; released: boolean }[] = []
        for (const o of ops) {
          if (o.op === 'check') {
            const d = sync(limiter.check(facts()))
            if (!inForce) {
              expect(d.outcomes).toHaveLength(0)
              continue
            }
            expect(d.allowed).toBe(held < 2)
            if (d.allowed) {
              held++
              admitted.push({ d, life, released: false })
            }
          } else if (o.op === 'release') {
            const a = admitted[o.which % Math.max(1, admitted.length)]
            if (a === undefined) continue
            limiter.release(a.d)
            if (!a.released && a.life === life && inForce) held--
            a.released = true
          } else if (o.op === 'remove' && inForce) {
            limiter.updateRules([other])
            inForce = false
            life++
            held = 0
          } else if (o.op === 'add' && !inForce) {
            limiter.updateRules([slots, other])
            inForce = true
          } else if (o.op === 'same' && inForce) {
            limiter.updateRules([slots, other])
          }
        }
      }),
      {
        numRuns: 300,
        examples: [
          [
            [
              { op: 'check' },
              { op: 'remove' },
              { op: 'add' },
              { op: 'check' },
              { op: 'check' },
              { op: 'release', which: 0 },
              { op: 'check' },
            ],
          ],
        ],
      },
    )
  })

  it('a request of the rule that left, released after it came back, frees none of the new slots', () => {
    const limiter = createLimiter({
      rules: [{ ...slots, limit: 1 }],
      clock: () => 0,
    })
    const before = sync(limiter.check(facts()))
    expect(before.allowed).toBe(true)
    limiter.updateRules([])
    limiter.updateRules([{ ...slots, limit: 1 }])
    const after = sync(limiter.check(facts()))
    expect(after.allowed).toBe(true)
    limiter.release(before)
    // `after` still holds the only slot.
    expect(sync(limiter.check(facts())).allowed).toBe(false)
    limiter.release(after)
    expect(sync(limiter.check(facts())).allowed).toBe(true)
  })

  it('units a request holds for counting by outcome or a queue go back only to the state they were charged in', async () => {
    const refunded: RefundEntry[] = []
    const store = new MemoryStore()
    const refund = store.refund.bind(store)
    store.refund = (entries, nowMs) => {
      refunded.push(...entries)
      refund(entries, nowMs)
    }
    const failed: RuleInput = { id: 'failed', limit: 2, window: '1m', count: 'failed' }
    const queued: RuleInput = {
      id: 'queued',
      limit: 1,
      window: '1s',
      onLimit: { action: 'queue', maxWait: '1s', maxQueue: 5 },
    }
    const limiter = createLimiter({ rules: [failed, queued], store, clock: () => 0 })
    const first = sync(limiter.check(facts()))
    const waiting = sync(limiter.check(facts()))
    expect(waiting.action).toBe('queue')
    limiter.updateRules([])
    limiter.updateRules([failed, queued])
    // The new states were charged by these two only.
    const a = sync(limiter.check(facts()))
    expect(a.allowed).toBe(true)
    const gone = new AbortController()
    const wait = limiter.waitInQueue(waiting, gone.signal)
    gone.abort()
    expect(await wait).toBe(false)
    limiter.release(first, 'succeeded')
    expect(refunded).toEqual([])
    // The new state's own requests still get their units back.
    limiter.release(a, 'succeeded')
    expect(refunded.map((e) => e.rule.rule.id)).toEqual(['failed'])
  })
})

/**
 * A MemoryStore that records at once and answers when the test says (a networked store with a
 * rules swap under way meanwhile), and drops the state of rules that leave (a custom store
 * keeping its state in memory may, as SyncedStore does).
 */
function laterStore() {
  const memory = new MemoryStore()
  const answers: (() => void)[] = []
  const refunded: RefundEntry[] = []
  const store: Store = {
    consume: (entries, nowMs) => {
      const results = memory.consume(entries, nowMs).map((r) => ({ ...r }))
      return new Promise((resolve) => answers.push(() => resolve(results)))
    },
    refund: (entries, nowMs) => {
      refunded.push(...entries)
      memory.refund(entries, nowMs)
    },
    retain: (ids) => memory.retain(ids),
  }
  const answer = async <T>(d: Decision | Promise<T>): Promise<T> => {
    answers.shift()!()
    return (await d) as T
  }
  return { store, answer, answers, refunded }
}

describe('a rule that leaves and comes back while the store decides a request: what it records stays with the state that left', () => {
  it('a slot taken before the swap, answered after it and released, frees none of the new slots', async () => {
    const { store, answer } = laterStore()
    const one = { ...slots, limit: 1 }
    const limiter = createLimiter({ rules: [one], store, clock: () => 0 })
    const sent = limiter.check(facts())
    limiter.updateRules([other])
    limiter.updateRules([one])
    const before = await answer<Decision>(sent)
    expect(before.allowed).toBe(true)
    const after = await answer<Decision>(limiter.check(facts()))
    expect(after.allowed).toBe(true)
    limiter.release(before)
    // `after` still holds the new state's only slot (before the fix: freed, and a third admitted).
    expect((await answer<Decision>(limiter.check(facts()))).allowed).toBe(false)
    limiter.release(after)
    expect((await answer<Decision>(limiter.check(facts()))).allowed).toBe(true)
  })

  it('a slot in the answer that came after the deadline is not given back to the new state', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] })
    try {
      const { store, answers, refunded } = laterStore()
      const one = { ...slots, limit: 1 }
      const limiter = createLimiter({ rules: [one], store, clock: () => 0 })
      const sent = limiter.check(facts())
      vi.advanceTimersByTime(50)
      expect((await sent).failedOpen).toBe(true)
      limiter.updateRules([other])
      limiter.updateRules([one])
      const now = limiter.check(facts())
      answers[1]!()
      expect((await now).allowed).toBe(true)
      // The first answer comes now: its slot was taken in the state that left.
      answers[0]!()
      for (let i = 0; i < 5; i++) await Promise.resolve()
      expect(refunded).toEqual([])
      const third = limiter.check(facts())
      answers[2]!()
      expect((await third).allowed).toBe(false)
    } finally {
      vi.useRealTimers()
    }
  })

  it('units charged before the swap for a request whose queue filled meanwhile are not credited to the new state', async () => {
    const { store, answer, refunded } = laterStore()
    const rate: RuleInput = { id: 'rate', limit: 10, window: '1m' }
    const q: RuleInput = {
      id: 'q',
      limit: 1,
      window: '1s',
      onLimit: { action: 'queue', maxWait: '5s', maxQueue: 1 },
    }
    const limiter = createLimiter({ rules: [rate, q], store, clock: () => 0 })
    expect((await answer<Decision>(limiter.check(facts()))).action).toBe('allow')
    // Two requests sent together: both would wait, the second finds the one place taken.
    const first = limiter.check(facts())
    const second = limiter.check(facts())
    limiter.updateRules([other])
    limiter.updateRules([rate, q])
    expect((await answer<Decision>(first)).action).toBe('queue')
    expect((await answer<Decision>(second)).action).toBe('reject')
    // What the second was charged went with the states that left.
    expect(refunded).toEqual([])
  })
})
