import { describe, expect, it } from 'vitest'
import type { AlgorithmResult } from '../algorithms/algorithm.js'
import type { Decision } from '../decision.js'
import { createLimiter } from '../limiter.js'
import type { RuleInput } from '../rules/schema.js'
import { MemoryStore } from '../stores/memory-store.js'
import type { ConsumeEntry, RefundEntry, Store } from '../stores/store.js'

// The limiter's default clock is the wall clock, which an NTP correction, a restored VM
// snapshot or an operator can step back or forward. An adaptive rule's window, the latencies it
// measures and its stall verdict are all durations: a step must not freeze the limit (the
// window under way waiting for the clock to catch up), jump it by many steps at once, or feed
// it a latency the service never had.

const SECOND = 1000
const MINUTE = 60 * SECOND
const HOUR = 60 * MINUTE
const facts = { method: 'GET', path: '/', ip: '203.0.113.7', headers: {} }

function setup(adaptive: Record<string, unknown> = {}) {
  const clock = { now: 1_000_000_000 }
  const rule = {
    id: 'a',
    algorithm: 'adaptive',
    adaptive: {
      target: '100ms',
      window: '1s',
      initialLimit: 4,
      minLimit: 1,
      maxLimit: 64,
      minSamples: 1,
      reserve: 0,
      ...adaptive,
    },
  } as RuleInput
  const limiter = createLimiter({ clock: () => clock.now, rules: [rule] })
  const state = () => limiter.adaptive('a')!
  /** One request answered in `latencyMs`. */
  const answer = (latencyMs: number) => {
    const d = limiter.check(facts) as Decision
    clock.now += latencyMs
    limiter.release(d)
  }
  return { limiter, clock, state, answer }
}

describe('adaptive rule: the wall clock steps back', () => {
  for (const step of [SECOND, MINUTE, HOUR]) {
    it(`by ${step / SECOND} s: the window under way ends when its own time has passed`, () => {
      const { clock, state, answer } = setup()
      answer(10) // starts the first window
      clock.now += 490 // half of it gone
      expect(state().windows).toBe(0)
      clock.now -= step
      // Fast answers for 600 ms after the step: the window had 500 ms left.
      for (let i = 0; i < 6; i++) {
        answer(10)
        clock.now += 90
      }
      expect(state().windows, 'windows closed 600 ms after the step').toBe(1)
      // And it goes on adapting: one window per second of traffic.
      for (let i = 0; i < 30; i++) {
        answer(10)
        clock.now += 90
      }
      expect(state().windows).toBeGreaterThanOrEqual(3)
      expect(state().samples).toBeGreaterThan(5)
    })
  }

  it('a request in flight across the step is not measured as answering in no time', () => {
    // No target: the baseline is learnt from the percentile, and a latency of 0 would drag it
    // (and with it the reference) to nothing.
    const { limiter, clock, state, answer } = setup({ target: undefined })
    answer(50)
    const held = limiter.check(facts) as Decision
    clock.now += 30
    clock.now -= MINUTE
    clock.now += 30
    limiter.release(held)
    clock.now += SECOND
    answer(50)
    expect(state().windows).toBe(1)
    expect(state().percentileMs).toBeGreaterThan(40)
    expect(state().baselineMs).toBeGreaterThan(40)
  })
})

describe('adaptive rule: the wall clock steps forward', () => {
  for (const step of [5 * SECOND, MINUTE, HOUR]) {
    it(`by ${step / SECOND} s with the limit full: it moves at most one step`, () => {
      const { limiter, clock, state } = setup({ initialLimit: 20, maxDecrease: 0.5 })
      const held: Decision[] = []
      for (let i = 0; i < 20; i++) held.push(limiter.check(facts) as Decision)
      expect(state().inFlight).toBe(20)
      clock.now += 100
      clock.now += step
      // Not a window (or many) in which nothing completed: the service may have had 100 ms.
      expect(state().limit, 'the limit after the step').toBe(20)
      expect(state().windows).toBe(0)
      for (const d of held) limiter.release(d)
    })
  }

  it('a request in flight across the step is not measured as taking the whole step', () => {
    const { limiter, clock, state, answer } = setup({ target: undefined })
    answer(50)
    const held = limiter.check(facts) as Decision
    clock.now += 30
    clock.now += HOUR
    clock.now += 30
    limiter.release(held)
    // The window holding that response (and nothing else) closes.
    clock.now += SECOND
    expect(state().percentileMs ?? 0).toBeLessThan(SECOND)
    expect(state().baselineMs ?? 0).toBeLessThan(SECOND)
  })
})

describe('adaptive rule beside another rule: a store answer that comes later', () => {
  it('is decided by the gate at its arrival, not at the time it was asked', async () => {
    const clock = { now: 1_000_000_000 }
    const memory = new MemoryStore()
    const waiting: (() => void)[] = []
    const store: Store = {
      consume: (entries: readonly ConsumeEntry[], nowMs: number) => {
        const answer = memory.consume(entries, nowMs)
        return new Promise<readonly AlgorithmResult[]>((resolve) =>
          waiting.push(() => resolve(answer)),
        )
      },
      refund: (entries: readonly RefundEntry[], nowMs: number) => memory.refund(entries, nowMs),
    }
    const limiter = createLimiter({
      clock: () => clock.now,
      store,
      decisionTimeoutMs: HOUR,
      rules: [
        {
          id: 'a',
          algorithm: 'adaptive',
          adaptive: { target: '100ms', window: '1s', initialLimit: 4, minSamples: 1, reserve: 0 },
        },
        { id: 'tb', algorithm: 'token-bucket', limit: 100, window: '1s' },
      ],
    })
    const pending = limiter.check(facts) // starts the first window, and waits for the store
    clock.now += 600
    expect(limiter.adaptive('a')!.windows).toBe(0)
    waiting.pop()!()
    const d = await pending
    expect(d.allowed).toBe(true)
    expect(limiter.adaptive('a')!.inFlight).toBe(1)
    clock.now += 50
    limiter.release(d) // a response of 50 ms, for the window to close on
    // Had the gate been told the time the store was asked, it would have seen the clock go
    // back 600 ms, then forward 650, counting those 600 ms twice: the window would have ended
    // early, before its one response.
    clock.now += 250
    expect(limiter.adaptive('a')!.windows, '900 ms into the first window').toBe(0)
    clock.now += 100
    expect(limiter.adaptive('a')!.windows, 'at its end').toBe(1)
    expect(limiter.adaptive('a')!.samples).toBe(1)
  })
})
