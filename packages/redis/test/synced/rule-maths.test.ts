import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { OptionsError } from '@floodgate/core'
import type { AlgorithmName } from '@floodgate/core/algorithms'
import { testRule } from '@floodgate/core/testing'
import {
  TTL_SLACK_MS,
  checkShareable,
  idleMs,
  interval,
  isShareable,
  rememberMs,
  ttlMs,
} from '../../src/synced/rule-maths.js'
import { MAX_TTL_MS } from '../../src/key-ttl.js'

describe('the rule maths of a SyncedStore', () => {
  it('derives the refill step, the idle time, the TTL and how long a key is remembered', () => {
    const rule = testRule('token-bucket', 10, 1000, { burst: 20 })
    expect(interval(rule)).toBe(100)
    expect(idleMs(rule)).toBe(2000) // 20 units at 100 ms each
    expect(ttlMs(rule)).toBe(2000 + TTL_SLACK_MS)
    expect(rememberMs(rule, 100)).toBe(20_000) // 10 idle times beat 20 sync intervals
    expect(rememberMs(rule, 5000)).toBe(ttlMs(rule)) // never past the counter's life
    // A refill longer than Redis can hold a TTL (about 10^25 ms) is capped, as an integer.
    expect(ttlMs(testRule('token-bucket', 1, 2 ** 31 - 1, { burst: 2 ** 52 }))).toBe(MAX_TTL_MS)
  })

  it('rounds the idle time up, so a key is never dropped before it refilled', () => {
    const rule = testRule('gcra', 3, 1000)
    expect(interval(rule)).toBeCloseTo(333.333, 3)
    expect(idleMs(rule)).toBe(1000)
    expect(idleMs(testRule('gcra', 7, 1000, { burst: 2 }))).toBe(286)
  })

  it('remembers a key at least one refill and at most the counter life (property)', () => {
    fc.assert(
      fc.property(
        fc.constantFrom<AlgorithmName>('token-bucket', 'gcra'),
        fc.integer({ min: 1, max: 10_000 }),
        fc.integer({ min: 1, max: 86_400_000 }),
        fc.integer({ min: 1, max: 10_000 }),
        fc.integer({ min: 1, max: 600_000 }),
        (algorithm, limit, windowMs, burst, syncMs) => {
          const rule = testRule(algorithm, limit, windowMs, { burst })
          const idle = idleMs(rule)
          // interval() is a float: burst × interval can exceed the exact refill time by a
          // rounding error (13 × 27628207/13 = 27628207.000000004).
          expect(idle).toBeGreaterThanOrEqual(burst * interval(rule) * (1 - 1e-12))
          expect(rememberMs(rule, syncMs)).toBeGreaterThanOrEqual(idle)
          expect(rememberMs(rule, syncMs)).toBeLessThanOrEqual(ttlMs(rule))
        },
      ),
    )
  })

  it('shares token bucket and GCRA only', () => {
    expect(isShareable(testRule('token-bucket', 1, 1000))).toBe(true)
    expect(isShareable(testRule('gcra', 1, 1000))).toBe(true)
    for (const name of [
      'fixed-window',
      'sliding-window-log',
      'sliding-window-counter',
      'leaky-bucket',
      'concurrency',
    ] as const) {
      expect(isShareable(testRule(name, 1, 1000))).toBe(false)
    }
  })

  it('refuses a rule state it cannot share, naming the rule and its algorithm', () => {
    expect(() => checkShareable(['a|token-bucket|1|1000|1', 'b|gcra|1|1000|1'])).not.toThrow()
    // A stateId it does not understand is left to the store that owns the rules.
    expect(() => checkShareable(['odd', 'x|no-such|1|1|1'])).not.toThrow()
    const attempt = (): void =>
      checkShareable(['ok|gcra|1|1000|1', 'per-minute|fixed-window|5|60000|5'])
    expect(attempt).toThrow(OptionsError)
    expect(attempt).toThrow(/rule per-minute uses fixed-window/)
  })
})
