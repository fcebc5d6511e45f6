import type { AlgorithmName, AlgorithmParams, AlgorithmResult } from '../algorithms/algorithm.js'

/** One request of a {@link AlgorithmVector}: what is asked, and what must come back. */
export interface VectorStep {
  /** Clock passed to the store, in ms. Windows align to multiples of `windowMs` from 0. */
  readonly atMs: number
  readonly cost: number
  /** Reservation allowed up to this wait. @default 0 */
  readonly maxWaitMs?: number
  /** The fields that must match exactly (the others are not checked). */
  readonly expect: Partial<AlgorithmResult>
}

/** A named sequence of requests against one fresh key, with the exact expected results. */
export interface AlgorithmVector {
  readonly name: string
  readonly algorithm: AlgorithmName
  readonly params: AlgorithmParams
  readonly steps: readonly VectorStep[]
}

const ok = (remaining: number, extra: Partial<AlgorithmResult> = {}): Partial<AlgorithmResult> => ({
  allowed: true,
  remaining,
  retryAfterMs: 0,
  ...extra,
})
const no = (
  retryAfterMs: number,
  extra: Partial<AlgorithmResult> = {},
): Partial<AlgorithmResult> => ({
  allowed: false,
  retryAfterMs,
  ...extra,
})

/** Ten requests of cost 1 at `fromMs`, `fromMs + stepMs`, … with remaining counting down from `limit - 1`. */
function ten(fromMs: number, stepMs: number, limit = 10): VectorStep[] {
  return Array.from({ length: 10 }, (_, i) => ({
    atMs: fromMs + i * stepMs,
    cost: 1,
    expect: ok(limit - 1 - i),
  }))
}

/**
 * The token-bucket walk-through of the spec: capacity 10, refill 10/s, full at t0 = 0; at
 * +300 ms cost 6 passes leaving 4; at +200 ms more (2 tokens refilled) cost 5 passes leaving
 * 1; 1000 ms later the bucket is full (10), never more. A request costing exactly what is
 * left passes. GCRA and the leaky bucket (as a meter) must give the same answers.
 */
function walkThrough(algorithm: AlgorithmName): AlgorithmVector {
  return {
    name: `${algorithm}: capacity 10, 10/s walk-through`,
    algorithm,
    params: { limit: 10, windowMs: 1000, burst: 10 },
    steps: [
      { atMs: 300, cost: 6, expect: ok(4, { limit: 10, waitMs: 0, resetMs: 600 }) },
      { atMs: 500, cost: 5, expect: ok(1, { limit: 10, waitMs: 0, resetMs: 900 }) },
      // 1000 ms later: full. Costing exactly the 10 tokens left passes...
      { atMs: 1500, cost: 10, expect: ok(0, { resetMs: 1000 }) },
      // ...and then the bucket is empty: one token takes 100 ms.
      { atMs: 1500, cost: 1, expect: no(100, { remaining: 0, resetMs: 1000 }) },
      // Long idle: still 10 tokens, never more.
      { atMs: 60_000, cost: 10, expect: ok(0) },
      { atMs: 60_000, cost: 1, expect: no(100, { remaining: 0 }) },
    ],
  }
}

/** Shared test vectors for every algorithm, run against every Store by the conformance suite. */
export const vectors: readonly AlgorithmVector[] = [
  walkThrough('token-bucket'),
  walkThrough('gcra'),
  walkThrough('leaky-bucket'),
  {
    name: 'token-bucket: a reservation waits, goes into debt, and the debt is paid back',
    algorithm: 'token-bucket',
    params: { limit: 10, windowMs: 1000, burst: 10 },
    steps: [
      { atMs: 0, cost: 10, expect: ok(0) },
      { atMs: 0, cost: 2, maxWaitMs: 500, expect: ok(0, { waitMs: 200, resetMs: 1200 }) },
      // Beyond maxWaitMs: refused; it could be queued 100 ms later (wait 700 - 600).
      { atMs: 0, cost: 5, maxWaitMs: 600, expect: no(100, { waitMs: 0, remaining: 0 }) },
      { atMs: 200, cost: 1, expect: no(100, { remaining: 0 }) },
      { atMs: 300, cost: 1, expect: ok(0) },
    ],
  },
  {
    name: 'gcra: a reservation pushes the TAT out',
    algorithm: 'gcra',
    params: { limit: 10, windowMs: 1000, burst: 10 },
    steps: [
      { atMs: 0, cost: 10, expect: ok(0) },
      { atMs: 0, cost: 2, maxWaitMs: 500, expect: ok(0, { waitMs: 200, resetMs: 1200 }) },
      { atMs: 200, cost: 1, expect: no(100, { remaining: 0 }) },
      { atMs: 300, cost: 1, expect: ok(0) },
    ],
  },
  {
    name: 'gcra: burst 3 at 1 per 100 ms',
    algorithm: 'gcra',
    params: { limit: 10, windowMs: 1000, burst: 3 },
    steps: [
      { atMs: 1000, cost: 1, expect: ok(2, { limit: 3 }) },
      { atMs: 1000, cost: 1, expect: ok(1) },
      { atMs: 1000, cost: 1, expect: ok(0, { resetMs: 300 }) },
      { atMs: 1050, cost: 1, expect: no(50, { remaining: 0 }) },
      { atMs: 1100, cost: 1, expect: ok(0) },
    ],
  },
  {
    name: 'fixed-window: 2 × limit pass across a boundary',
    algorithm: 'fixed-window',
    params: { limit: 10, windowMs: 1000, burst: 10 },
    steps: [
      ...ten(990, 1),
      { atMs: 999, cost: 1, expect: no(1, { remaining: 0, resetMs: 1 }) },
      ...ten(1000, 1),
      { atMs: 1010, cost: 1, expect: no(990, { remaining: 0, resetMs: 990 }) },
    ],
  },
  {
    name: 'fixed-window: 0.90 … 0.99 s pass, and so do 1.00 and 1.01 s',
    algorithm: 'fixed-window',
    params: { limit: 10, windowMs: 1000, burst: 10 },
    steps: [
      ...ten(900, 10),
      { atMs: 1000, cost: 1, expect: ok(9) },
      { atMs: 1010, cost: 1, expect: ok(8) },
    ],
  },
  {
    name: 'fixed-window: a reservation carries into the next windows',
    algorithm: 'fixed-window',
    params: { limit: 2, windowMs: 1000, burst: 2 },
    steps: [
      { atMs: 100, cost: 2, expect: ok(0, { resetMs: 900 }) },
      { atMs: 100, cost: 1, maxWaitMs: 1000, expect: ok(0, { waitMs: 900, resetMs: 1900 }) },
      { atMs: 100, cost: 2, maxWaitMs: 2000, expect: ok(0, { waitMs: 1900, resetMs: 2900 }) },
      // Window 1000: 5 - 2 = 3 carried in; one more needs the window at 2000.
      { atMs: 1000, cost: 1, expect: no(1000, { remaining: 0 }) },
      { atMs: 3000, cost: 2, expect: ok(0) },
    ],
  },
  {
    name: 'sliding-window-log: 0.90 … 0.99 s pass, 1.00 and 1.01 s are refused',
    algorithm: 'sliding-window-log',
    params: { limit: 10, windowMs: 1000, burst: 10 },
    steps: [
      ...ten(900, 10),
      // The entry at 900 leaves the window (t - 1000, t] at t = 1900.
      { atMs: 1000, cost: 1, expect: no(900, { remaining: 0, resetMs: 990 }) },
      { atMs: 1010, cost: 1, expect: no(890, { remaining: 0 }) },
      { atMs: 1899, cost: 1, expect: no(1, { remaining: 0 }) },
      { atMs: 1900, cost: 1, expect: ok(0, { resetMs: 1000 }) },
      // Two units need the oldest entry still in the window (920) gone: at 1920.
      { atMs: 1910, cost: 2, expect: no(10, { remaining: 1 }) },
      { atMs: 1920, cost: 2, expect: ok(0) },
    ],
  },
  {
    name: 'sliding-window-log: a cost above the limit never passes',
    algorithm: 'sliding-window-log',
    params: { limit: 3, windowMs: 1000, burst: 3 },
    steps: [
      { atMs: 0, cost: 4, expect: { allowed: false, remaining: 3 } },
      { atMs: 0, cost: 3, expect: ok(0, { resetMs: 1000 }) },
    ],
  },
  {
    name: 'sliding-window-counter: the previous window weighs by its overlap',
    algorithm: 'sliding-window-counter',
    params: { limit: 10, windowMs: 1000, burst: 10 },
    steps: [
      ...ten(500, 0),
      // At 1000 the previous window still weighs fully: 10 × 1.0 = 10.
      { atMs: 1000, cost: 1, expect: no(100, { remaining: 0, resetMs: 1000 }) },
      // At 1100: 10 × 0.9 + 0 = 9, so one more passes.
      { atMs: 1100, cost: 1, expect: ok(0, { resetMs: 1900 }) },
      { atMs: 1100, cost: 1, expect: no(100, { remaining: 0 }) },
      // At 1500: 10 × 0.5 + 1 = 6.
      { atMs: 1500, cost: 1, expect: ok(3) },
      // At 2500: 2 × 0.5 + 0 = 1.
      { atMs: 2500, cost: 1, expect: ok(8) },
    ],
  },
  {
    name: 'leaky-bucket: as a shaper, requests leave evenly spaced',
    algorithm: 'leaky-bucket',
    params: { limit: 10, windowMs: 1000, burst: 5 },
    steps: [
      { atMs: 0, cost: 1, maxWaitMs: 1000, expect: ok(4, { waitMs: 0, limit: 5 }) },
      { atMs: 0, cost: 1, maxWaitMs: 1000, expect: ok(3, { waitMs: 100 }) },
      { atMs: 0, cost: 1, maxWaitMs: 1000, expect: ok(2, { waitMs: 200 }) },
      { atMs: 0, cost: 1, maxWaitMs: 1000, expect: ok(1, { waitMs: 300 }) },
      { atMs: 0, cost: 1, maxWaitMs: 1000, expect: ok(0, { waitMs: 400, resetMs: 500 }) },
      // Full: refused until one unit has drained.
      { atMs: 0, cost: 1, maxWaitMs: 1000, expect: no(100, { waitMs: 0, remaining: 0 }) },
      // A wait beyond maxWaitMs is refused too, until it fits.
      { atMs: 100, cost: 1, maxWaitMs: 150, expect: no(250, { remaining: 1 }) },
      { atMs: 350, cost: 1, maxWaitMs: 150, expect: ok(2, { waitMs: 150 }) },
    ],
  },
  {
    name: 'concurrency: slots are taken until none is left',
    algorithm: 'concurrency',
    params: { limit: 2, windowMs: 1000, burst: 2 },
    steps: [
      { atMs: 0, cost: 1, expect: ok(1, { resetMs: 0, limit: 2 }) },
      { atMs: 5000, cost: 1, expect: ok(0, { resetMs: 0 }) },
      { atMs: 9000, cost: 1, expect: no(1000, { remaining: 0, resetMs: 0, waitMs: 0 }) },
    ],
  },
]
