import { describe, expect, it } from 'vitest'
import type { RuleInput } from '../rules/schema.js'
import {
  simulate,
  type ServiceModel,
  type SimClient,
  type WindowRecord,
} from './simulate.test-util.js'

// Deterministic simulations (injected clock, no timers) of a service whose latency grows with
// the requests it holds: `baseMs` up to `capacity` requests, then in proportion. With a target
// of 250 ms, a service of base 100 ms and capacity 10 is right at 25 requests in flight; when
// it slows to 200 ms, at 12.5. The bounds asserted here are the ones docs/adaptive.md states.

const TARGET_MS = 250
const FAST: ServiceModel = { baseMs: 100, capacity: 10 }
const SLOW: ServiceModel = { baseMs: 200, capacity: 10 }

const rule = (adaptive: Record<string, unknown> = {}): RuleInput => ({
  id: 'shed',
  algorithm: 'adaptive',
  adaptive: { target: `${TARGET_MS}ms`, window: '1s', maxLimit: 200, minSamples: 10, ...adaptive },
})

/** `n` well-behaved clients, one request at a time, sent again at once. */
const crowd = (n: number, prefix = '10.0.'): SimClient[] =>
  Array.from({ length: n }, (_, i) => ({
    ip: `${prefix}${i >> 8}.${i & 255}`,
    concurrency: 1,
    thinkMs: 0,
    retryMs: 100,
  }))

/** The records of the windows that ended within [fromS, toS] seconds. */
const between = (ws: readonly WindowRecord[], fromS: number, toS: number): WindowRecord[] =>
  ws.filter((w) => w.atMs >= fromS * 1000 && w.atMs <= toS * 1000)

const limits = (ws: readonly WindowRecord[]): number[] => ws.map((w) => w.state.limit)

describe('adaptive control: a service that slows down and recovers (60 clients, 1 s windows)', () => {
  const run = simulate({
    rule: rule(),
    clients: crowd(60),
    phases: [
      { fromMs: 0, service: FAST },
      { fromMs: 20_000, service: SLOW },
      { fromMs: 40_000, service: FAST },
    ],
    durationMs: 60_000,
    recordEveryMs: 1000,
  })
  const ws = run.windows

  it('converges from its initial limit within 5 windows and holds p99 within 10% of the target', () => {
    for (const w of between(ws, 5, 20)) {
      expect(w.state.limit).toBeGreaterThanOrEqual(22)
      expect(w.state.limit).toBeLessThanOrEqual(28)
      expect(w.p99Ms!).toBeLessThanOrEqual(TARGET_MS * 1.1)
    }
  })

  it('follows the slowdown within 5 windows (limit within 20% of 12.5) and keeps p99 near the target', () => {
    const after = between(ws, 25, 40)
    for (const w of after) {
      expect(w.state.limit).toBeGreaterThanOrEqual(10)
      expect(w.state.limit).toBeLessThanOrEqual(15)
      expect(w.p99Ms!).toBeLessThanOrEqual(TARGET_MS * 1.1)
    }
    // It did have to shed: 60 clients want 60 slots.
    expect(run.limiter.counters().byRule.get('shed')!.rejected).toBeGreaterThan(0)
  })

  it('recovers within 6 windows of the service speeding up again', () => {
    for (const w of between(ws, 46, 60)) {
      expect(w.state.limit).toBeGreaterThanOrEqual(22)
      expect(w.state.limit).toBeLessThanOrEqual(28)
      expect(w.p99Ms!).toBeLessThanOrEqual(TARGET_MS * 1.1)
    }
  })

  it('oscillates by at most 2 slots once settled', () => {
    for (const [from, to] of [
      [6, 20],
      [26, 40],
      [47, 60],
    ] as const) {
      const ls = limits(between(ws, from, to))
      expect(Math.max(...ls) - Math.min(...ls)).toBeLessThanOrEqual(2)
    }
  })

  it('moves at most by its step bounds each window (halved at most, doubled at most)', () => {
    for (let i = 1; i < ws.length; i++) {
      const [a, b] = [ws[i - 1]!.state.limit, ws[i]!.state.limit]
      // Whole slots: the fractional limit underneath moves within the bounds.
      expect(b).toBeGreaterThanOrEqual(Math.floor(a * 0.5) - 1)
      expect(b).toBeLessThanOrEqual(Math.ceil(a * 2) + 1)
    }
  })
})

describe('adaptive control: bounds', () => {
  it('never rises past maxLimit, however fast the service', () => {
    const run = simulate({
      rule: rule({ maxLimit: 15, initialLimit: 5 }),
      clients: crowd(60),
      phases: [{ fromMs: 0, service: { baseMs: 10, capacity: 100 } }],
      durationMs: 20_000,
      recordEveryMs: 1000,
    })
    const ls = limits(run.windows)
    expect(Math.max(...ls)).toBe(15)
    expect(ls.at(-1)).toBe(15)
  })

  it('never falls under minLimit, however slow the service', () => {
    const run = simulate({
      rule: rule({ minLimit: 4, initialLimit: 30 }),
      clients: crowd(60),
      phases: [{ fromMs: 0, service: { baseMs: 2000, capacity: 2 } }],
      durationMs: 120_000,
      recordEveryMs: 1000,
    })
    const ls = limits(run.windows)
    expect(Math.min(...ls)).toBe(4)
    expect(ls.at(-1)).toBe(4)
  })

  it('falls to minLimit within 6 windows when nothing completes at all (a hung dependency)', () => {
    const run = simulate({
      rule: rule({ minLimit: 2, initialLimit: 40 }),
      clients: crowd(60),
      phases: [{ fromMs: 0, service: { baseMs: 3_600_000, capacity: 1 } }],
      durationMs: 7000,
      recordEveryMs: 1000,
    })
    // 40 → 20 → 10 → 5 → 2.5 → 2: halved each window with no response.
    expect(run.windows.map((w) => w.state.limit).slice(0, 6)).toEqual([20, 10, 5, 2, 2, 2])
  })
})

describe('adaptive control: noisy latencies', () => {
  it('holds p99 within 20% of the target when each latency varies by ±30%', () => {
    const run = simulate({
      rule: rule(),
      clients: crowd(60),
      phases: [
        { fromMs: 0, service: { ...FAST, jitter: 0.3 } },
        { fromMs: 30_000, service: { ...SLOW, jitter: 0.3 } },
      ],
      durationMs: 60_000,
      recordEveryMs: 1000,
    })
    for (const w of [...between(run.windows, 8, 30), ...between(run.windows, 38, 60)]) {
      expect(w.p99Ms!).toBeLessThanOrEqual(TARGET_MS * 1.2)
    }
  })
})

describe('adaptive control without a target: the baseline', () => {
  it('learns the no-load latency and holds p99 near tolerance × baseline (1.5 × 100 ms)', () => {
    const run = simulate({
      rule: {
        id: 'shed',
        algorithm: 'adaptive',
        adaptive: { window: '1s', initialLimit: 5, maxLimit: 200, minSamples: 10 },
      },
      clients: crowd(60),
      phases: [{ fromMs: 0, service: FAST }],
      durationMs: 30_000,
      recordEveryMs: 1000,
    })
    for (const w of between(run.windows, 10, 30)) {
      expect(w.state.baselineMs!).toBeGreaterThan(95)
      expect(w.state.baselineMs!).toBeLessThan(105)
      expect(w.p99Ms!).toBeLessThanOrEqual(150 * 1.1)
      // The right limit is 15 (latency 1.5 × base at 15 in flight).
      expect(w.state.limit).toBeGreaterThanOrEqual(13)
      expect(w.state.limit).toBeLessThanOrEqual(17)
    }
  })
})

describe('fairness: one noisy client and five well-behaved ones', () => {
  const noisy: SimClient = { ip: '192.0.2.1', concurrency: 40, thinkMs: 0, retryMs: 20 }
  const polite = Array.from({ length: 5 }, (_, i) => ({
    ip: `198.51.100.${i}`,
    concurrency: 1,
    thinkMs: 200,
    retryMs: 100,
  }))
  const run = simulate({
    rule: rule(),
    clients: [noisy, ...polite],
    phases: [
      { fromMs: 0, service: FAST },
      { fromMs: 20_000, service: SLOW },
    ],
    durationMs: 40_000,
    recordEveryMs: 1000,
  })

  it('keeps every well-behaved client at a success rate of at least 95% while the noisy one is shed', () => {
    for (const c of polite) {
      const t = run.tally.get(c.ip)!
      expect(t.admitted / t.sent).toBeGreaterThanOrEqual(0.95)
    }
    const t = run.tally.get(noisy.ip)!
    expect(t.refused / t.sent).toBeGreaterThan(0.9)
    expect(run.limiter.adaptive('shed')!.shedOverShare).toBeGreaterThan(0)
  })

  it('still holds p99 within 15% of the target (one slot is 8% of the latency at 12 in flight)', () => {
    for (const w of [...between(run.windows, 5, 20), ...between(run.windows, 26, 40)]) {
      expect(w.p99Ms!).toBeLessThanOrEqual(TARGET_MS * 1.15)
    }
  })

  it('without a reserve, the noisy client takes the slots and the others are refused', () => {
    const unfair = simulate({
      rule: rule({ reserve: 0 }),
      clients: [noisy, ...polite],
      phases: [{ fromMs: 0, service: FAST }],
      durationMs: 20_000,
      recordEveryMs: 1000,
    })
    const t = unfair.tally.get(polite[0]!.ip)!
    expect(t.admitted / t.sent).toBeLessThan(0.8)
  })
})
