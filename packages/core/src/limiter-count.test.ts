import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import type { AlgorithmResult } from './algorithms/algorithm.js'
import type { Decision } from './decision.js'
import { createLimiter } from './limiter.js'
import type { RequestOutcome } from './limiter-types.js'
import type { RequestFacts } from './request-facts.js'
import type { RuleInput } from './rules/schema.js'
import { MemoryStore } from './stores/memory-store.js'
import type { ConsumeEntry, RefundEntry, Store } from './stores/store.js'

const facts: RequestFacts = { method: 'POST', path: '/login', ip: '198.51.100.4', headers: {} }

/** A MemoryStore that records every refund it is asked for. */
class CountingStore implements Store {
  readonly synchronous = true
  readonly memory = new MemoryStore()
  readonly refunds: RefundEntry[][] = []
  consume(entries: readonly ConsumeEntry[], nowMs: number): readonly AlgorithmResult[] {
    return this.memory.consume(entries, nowMs)
  }
  refund(entries: readonly RefundEntry[], nowMs: number): void {
    this.refunds.push([...entries])
    this.memory.refund(entries, nowMs)
  }
  retain(ids: ReadonlySet<string>): void {
    this.memory.retain(ids)
  }
}

function setup(rules: RuleInput[]) {
  const store = new CountingStore()
  const limiter = createLimiter({ rules, store, clock: () => 5_000_000 })
  const check = (): Decision => {
    const d = limiter.check(facts)
    if (d instanceof Promise) throw new Error('expected a synchronous decision')
    return d
  }
  return { store, limiter, check }
}

const login: RuleInput = {
  id: 'login',
  match: 'POST /login',
  limit: 5,
  window: '15m',
  algorithm: 'fixed-window',
  count: 'failed',
}

describe("count: 'failed' and 'successful'", () => {
  it('login protection: successful logins give their unit back, failed ones keep it', () => {
    const { limiter, check } = setup([login])
    for (let i = 0; i < 20; i++) {
      const d = check()
      expect(d.allowed).toBe(true)
      limiter.release(d, 'succeeded')
    }
    for (let i = 0; i < 5; i++) limiter.release(check(), 'failed')
    expect(check()).toMatchObject({ allowed: false, rule: { id: 'login' } })
  })

  it("'successful' keeps only successes; without an outcome every charge stays", () => {
    const { limiter, check } = setup([{ ...login, count: 'successful', limit: 2 }])
    limiter.release(check(), 'failed')
    limiter.release(check(), 'failed')
    limiter.release(check(), 'succeeded')
    limiter.release(check()) // no outcome known: counted
    expect(check().allowed).toBe(false)
  })

  it('refunds exactly once, through the store, whatever calls follow', () => {
    const { store, limiter, check } = setup([
      login,
      { id: 'all', limit: 100, window: '1m', algorithm: 'fixed-window' },
    ])
    const d = check()
    limiter.release(d, 'succeeded')
    limiter.release(d, 'succeeded')
    limiter.release(d, 'failed')
    expect(store.refunds).toHaveLength(1)
    // Only the rule that leaves successes out gives its unit back.
    expect(store.refunds[0]!.map((e) => e.rule.rule.id)).toEqual(['login'])
    expect(check().remaining).toBe(4)
  })

  it('a refused request is never charged, so there is nothing to give back', () => {
    const { store, limiter, check } = setup([{ ...login, limit: 1 }])
    limiter.release(check(), 'failed')
    const refused = check()
    expect(refused.allowed).toBe(false)
    limiter.release(refused, 'succeeded')
    expect(store.refunds).toHaveLength(0)
  })

  it('a queued request abandoned by its client is refunded once, not again at release', async () => {
    const { store, limiter, check } = setup([
      {
        ...login,
        algorithm: 'token-bucket',
        limit: 1,
        window: '1s',
        onLimit: { action: 'queue', maxWait: '2s' },
      },
    ])
    limiter.release(check(), 'failed')
    const queued = check()
    expect(queued.action).toBe('queue')
    const aborter = new AbortController()
    const waiting = limiter.waitInQueue(queued, aborter.signal)
    aborter.abort()
    await expect(waiting).resolves.toBe(false)
    limiter.release(queued, 'succeeded')
    expect(store.refunds).toHaveLength(1)
  })

  it('shadow rules that count by outcome give back only what they recorded', () => {
    const { store, limiter, check } = setup([
      { ...login, id: 'shadow-login', shadow: true, limit: 1 },
      { id: 'gate', limit: 100, window: '1m' },
    ])
    limiter.release(check(), 'failed') // recorded by the shadow rule
    const over = check() // the shadow rule would refuse: it records nothing
    expect(over.outcomes[0]).toMatchObject({ shadow: true, allowed: false })
    limiter.release(over, 'succeeded')
    expect(store.refunds).toHaveLength(0)
  })
})

type Step =
  | { readonly kind: 'start' }
  | { readonly kind: 'end'; readonly which: number; readonly outcome: RequestOutcome | 'unknown' }

const step: fc.Arbitrary<Step> = fc.oneof(
  fc.constant<Step>({ kind: 'start' }),
  fc.record({
    kind: fc.constant('end' as const),
    which: fc.nat(40),
    outcome: fc.constantFrom<RequestOutcome | 'unknown'>('succeeded', 'failed', 'unknown'),
  }),
)

describe('counting by outcome against a reference model', () => {
  it('N requests with arbitrary outcomes, in any order, leave exactly the counted units charged', () => {
    fc.assert(
      fc.property(
        fc.constantFrom<'all' | 'failed' | 'successful'>('all', 'failed', 'successful'),
        fc.constantFrom<'fixed-window' | 'sliding-window-log' | 'token-bucket' | 'gcra'>(
          'fixed-window',
          'sliding-window-log',
          'token-bucket',
          'gcra',
        ),
        fc.integer({ min: 1, max: 8 }),
        fc.array(step, { maxLength: 60, size: 'max' }),
        (count, algorithm, limit, steps) => {
          const { limiter, check, store } = setup([
            { id: 'r', limit, window: '1h', algorithm, count },
          ])
          // The model: units charged now. A request is admitted while one unit is left; when
          // it ends, it gives its unit back unless the rule counts its outcome.
          let used = 0
          let refunds = 0
          const inFlight: Decision[] = []
          const counted = (o: RequestOutcome | 'unknown'): boolean =>
            o === 'unknown' || count === 'all' || (count === 'failed') === (o === 'failed')
          for (const s of steps) {
            if (s.kind === 'start') {
              const d = check()
              expect(d.allowed).toBe(used < limit)
              if (d.allowed) {
                used++
                expect(d.remaining).toBe(limit - used)
                inFlight.push(d)
              }
            } else if (inFlight.length > 0) {
              const [d] = inFlight.splice(s.which % inFlight.length, 1)
              limiter.release(d!, s.outcome === 'unknown' ? undefined : s.outcome)
              // Ending it again changes nothing.
              limiter.release(d!, 'succeeded')
              limiter.release(d!, 'failed')
              if (!counted(s.outcome)) {
                used--
                refunds++
              }
            }
          }
          expect(store.refunds).toHaveLength(refunds)
          // What is left equals the model: exactly limit - used more requests pass.
          let more = 0
          while (check().allowed) more++
          expect(more).toBe(limit - used)
        },
      ),
      { numRuns: 300 },
    )
  })
})
