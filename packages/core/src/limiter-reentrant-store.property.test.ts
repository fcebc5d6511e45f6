import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import type { AlgorithmResult } from './algorithms/algorithm.js'
import { createLimiter, type Limiter } from './limiter.js'
import type { RequestFacts } from './request-facts.js'
import { MemoryStore } from './stores/memory-store.js'
import type { ConsumeEntry, Store } from './stores/store.js'

const LIMIT = 3
const IPS = ['198.51.100.1', '198.51.100.2', '198.51.100.3'] as const
const facts = (ip: string): RequestFacts => ({ method: 'GET', path: '/', ip, headers: {} })

/** One request, and the requests the store itself makes to the limiter while deciding it. */
interface Step {
  readonly ip: number
  readonly nested: readonly number[]
}

const step: fc.Arbitrary<Step> = fc.record({
  ip: fc.nat(IPS.length - 1),
  nested: fc.array(fc.nat(IPS.length - 1), { maxLength: 2 }),
})

/** Where user code calls back into the limiter while a check() is under way. */
type Where = 'store' | 'key builder' | 'onDecision'

/**
 * Makes the nested requests of each outer one, from whichever user code `where` names: a
 * store that declares itself synchronous (as a wrapper of MemoryStore would), a key builder,
 * or `onDecision` (a logger, a metrics hook, a wrapper that asks the limiter about something
 * else).
 */
class Reentry {
  limiter: Limiter | undefined
  /** The nested requests still to make, one list per call of the user code, in order. */
  plan: number[][] = []
  /** Every decision of a nested request, in the order made. */
  readonly nestedDecisions: { ip: number; allowed: boolean }[] = []

  constructor(readonly where: Where) {}

  run(at: Where): void {
    if (at !== this.where) return
    const nested = this.plan.shift() ?? []
    for (const ip of nested) {
      const d = this.limiter!.check(facts(IPS[ip]!))
      if (d instanceof Promise) throw new Error('a synchronous store answers synchronously')
      this.nestedDecisions.push({ ip, allowed: d.allowed })
    }
  }
}

class ReentrantStore implements Store {
  readonly inner = new MemoryStore()

  constructor(
    readonly synchronous: boolean,
    readonly reentry: Reentry,
  ) {}

  consume(entries: readonly ConsumeEntry[], nowMs: number): readonly AlgorithmResult[] {
    this.reentry.run('store')
    // Copies: MemoryStore reuses its result objects on the next call.
    return this.inner.consume(entries, nowMs).map((r) => ({ ...r }))
  }

  refund(): void {}
}

describe('a store that calls back into the limiter from inside consume()', () => {
  it('every request, outer and nested, is decided for its own client as a plain count would decide it (property)', () => {
    fc.assert(
      fc.property(
        fc.array(step, { minLength: 1, maxLength: 12 }),
        fc.boolean(),
        fc.constantFrom<Where>('store', 'key builder', 'onDecision'),
        fc.boolean(),
        (steps, sync, where, alone) => {
          const reentry = new Reentry(where)
          const limiter = createLimiter({
            // Two rules: a nested request made while the second one's key is built must not
            // overwrite the entry of the first. One rule alone takes the limiter's short path,
            // with an entry object of its own to keep.
            rules: [
              ...(alone ? [] : [{ id: 'all', limit: 1000, window: '1h' }]),
              { id: 'r', limit: LIMIT, window: '1h', key: ['user'] },
            ],
            keys: {
              user: (_req, f) => {
                reentry.run('key builder')
                return f.ip
              },
            },
            onDecision: () => reentry.run('onDecision'),
            store: new ReentrantStore(sync, reentry),
            clock: () => 1_000_000,
          })
          reentry.limiter = limiter
          // The model: a count per client. Nested requests made before the store answers are
          // decided before the outer one; those onDecision makes, after it.
          const used = IPS.map(() => 0)
          const admit = (ip: number): boolean => {
            if (used[ip]! >= LIMIT) return false
            used[ip]!++
            return true
          }
          for (const s of steps) {
            // Nested requests make no nested requests of their own.
            reentry.plan = [[...s.nested], ...s.nested.map(() => [])]
            const before = reentry.nestedDecisions.length
            const d = limiter.check(facts(IPS[s.ip]!))
            if (d instanceof Promise) throw new Error('a synchronous store answers synchronously')
            const nestedMade = reentry.nestedDecisions.slice(before)
            expect(nestedMade.map((n) => n.ip)).toEqual(s.nested)
            const nestedFirst = where !== 'onDecision'
            if (nestedFirst) for (const n of nestedMade) expect(n.allowed).toBe(admit(n.ip))
            expect(d.failedOpen).toBe(false)
            expect(d.allowed).toBe(admit(s.ip))
            expect(d.remaining).toBe(LIMIT - used[s.ip]!)
            // Every rule counted this client, and only when the request was admitted.
            expect(d.outcomes.map((o) => [o.rule.id, o.remaining])).toEqual([
              ...(alone ? [] : [['all', 1000 - used[s.ip]!]]),
              ['r', LIMIT - used[s.ip]!],
            ])
            if (!nestedFirst) for (const n of nestedMade) expect(n.allowed).toBe(admit(n.ip))
          }
        },
      ),
      { numRuns: 300 },
    )
  })
})
