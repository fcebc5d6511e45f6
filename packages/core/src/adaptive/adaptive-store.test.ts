import { describe, expect, it } from 'vitest'
import type { CompiledRule } from '../rules/compiled-rules.js'
import type { Store } from '../stores/store.js'
import { AdaptiveGates } from './adaptive-gates.js'
import { AdaptiveStore, STORE_MEMBERS } from './adaptive-store.js'

// The limiter talks to every store through AdaptiveStore, so a member the wrapper drops is a
// capability every limiter loses without a word (a lost `recordedLimits` once made `get` and
// `reset` miss what other hosts recorded). Checked for every member of Store at once.

const rule = { rule: { id: 'plain', algorithm: 'token-bucket' } } as unknown as CompiledRule
const entry = { rule, key: 'k', cost: 1, maxWaitMs: 0, shadow: false }

/** A store with every member, each method recording that it was called and with what. */
function fullStore(calls: string[]): Store {
  const store: Record<string, unknown> = { synchronous: false, settlesWithinMs: 7 }
  for (const name of STORE_MEMBERS) {
    if (name === 'synchronous' || name === 'settlesWithinMs') continue
    store[name] = (...args: unknown[]) => {
      calls.push(name)
      return name === 'consume' || name === 'peek'
        ? [{ allowed: true, remaining: 0, limit: 1, resetMs: 0, retryAfterMs: 0 }]
        : name === 'recordedLimits'
          ? [{ limit: args.length }]
          : undefined
    }
  }
  return store as unknown as Store
}

/** Calls the wrapper's member `name` the way the limiter does. */
function call(store: Store, name: (typeof STORE_MEMBERS)[number]): unknown {
  switch (name) {
    case 'synchronous':
    case 'settlesWithinMs':
      return store[name]
    case 'consume':
      return store.consume([entry], 0)
    case 'refund':
      return store.refund([entry], 0)
    case 'peek':
      return store.peek!([entry], 0)
    case 'reset':
      return store.reset!([entry], 0)
    case 'penalize':
      return store.penalize!([entry], 0)
    case 'recordLimits':
      return store.recordLimits!('plain', { limit: 3 } as never)
    case 'recordedLimits':
      return store.recordedLimits!('plain')
    case 'retain':
      return store.retain!(new Set(['plain']))
    case 'close':
      return store.close!()
  }
}

describe('AdaptiveStore carries every member of the store it wraps', () => {
  it.each(STORE_MEMBERS)('%s reaches the wrapped store', (name) => {
    const calls: string[] = []
    const inner = fullStore(calls)
    const wrapped = new AdaptiveStore(inner, new AdaptiveGates(), () => 0)
    expect(wrapped[name], name).toBeDefined()
    const answer = call(wrapped, name)
    if (name === 'synchronous' || name === 'settlesWithinMs') {
      expect(answer).toBe(inner[name])
    } else {
      expect(calls).toEqual([name])
    }
  })

  it('adds no optional member the wrapped store lacks (the limiter reads their absence)', () => {
    const bare: Store = { consume: () => [], refund: () => {} }
    const wrapped = new AdaptiveStore(bare, new AdaptiveGates(), () => 0)
    const optional = STORE_MEMBERS.filter((m) => m !== 'consume' && m !== 'refund')
    for (const name of optional) expect(wrapped[name], name).toBeUndefined()
  })
})
