import fc from 'fast-check'
import type { AlgorithmParams } from '../algorithms/algorithm.js'
import { exactRate, MAX_EXACT_SCALED } from '../algorithms/exact-rate.js'

// Test support, not exported from the package: the buckets (token bucket, GCRA, leaky bucket)
// in exact integer arithmetic, and generators of params, costs and times up to the range in
// which the algorithms promise to be exact. The conformance suite and the algorithm tests
// both compare against it.

/** The bucket algorithms, which drain at `limit` per `windowMs`. */
export type ExactBucketName = 'token-bucket' | 'gcra' | 'leaky-bucket'

/** The answer of one decision, every field as an exact whole number. */
export interface ExactBucketResult {
  readonly allowed: boolean
  readonly waitMs: number
  readonly remaining: number
  readonly resetMs: number
  readonly retryAfterMs: number
}

const big = BigInt
const ceilDiv = (a: bigint, b: bigint): bigint => (a <= 0n ? 0n : (a + b - 1n) / b)
const maxOf = (...xs: bigint[]): bigint => xs.reduce((m, x) => (x > m ? x : m))

/**
 * One key of a bucket algorithm in BigInt arithmetic: the balance is kept as `used × windowMs`
 * (a whole number for whole costs), so every answer is exact at any size. A token bucket and
 * GCRA answer the same; the leaky bucket differs only as a shaper (`maxWaitMs > 0`).
 */
export class ExactBucket {
  private scaled = 0n
  private last = 0n
  private readonly w: bigint
  private readonly l: bigint
  private readonly cap: bigint

  constructor(
    private readonly algorithm: ExactBucketName,
    p: AlgorithmParams,
  ) {
    this.w = big(p.windowMs)
    this.l = big(p.limit)
    this.cap = big(p.burst) * this.w
  }

  private drained(nowMs: number): bigint {
    const now = big(nowMs)
    const elapsed = now > this.last ? now - this.last : 0n
    const left = this.scaled - elapsed * this.l
    return left > 0n ? left : 0n
  }

  /** Whole units a request may take at `nowMs` (what a cost of exactly what is left is). */
  left(nowMs: number): number {
    const room = this.cap - this.drained(nowMs)
    return room > 0n ? Number(room / this.w) : 0
  }

  /** The first millisecond at which the state is fresh again. */
  idleAtMs(): number {
    return Number(this.last + ceilDiv(this.scaled, this.l))
  }

  /** Decide a request of `cost` whole units at `nowMs`, recording it when admitted and `commit`. */
  consume(cost: number, nowMs: number, maxWaitMs = 0, commit = true): ExactBucketResult {
    if (!Number.isSafeInteger(cost) || cost < 0) throw new Error(`whole costs only: ${cost}`)
    const used = this.drained(nowMs)
    const after = used + big(cost) * this.w
    const fits = big(cost) * this.w <= this.cap
    const maxWait = big(maxWaitMs)
    const answer = (allowed: boolean, waitMs: bigint, retry: bigint): ExactBucketResult => {
      const held = allowed ? after : used
      const room = this.cap - held
      if (allowed && commit) {
        this.scaled = after
        const now = big(nowMs)
        if (now > this.last) this.last = now
      }
      return {
        allowed,
        waitMs: Number(waitMs),
        remaining: room > 0n ? Number(room / this.w) : 0,
        resetMs: Number(ceilDiv(held, this.l)),
        retryAfterMs: Number(retry),
      }
    }
    const overflowMs = ceilDiv(after - this.cap, this.l)
    if (this.algorithm === 'leaky-bucket') {
      const queueMs = maxWait > 0n ? ceilDiv(used, this.l) : 0n
      if (overflowMs === 0n && queueMs <= maxWait) return answer(true, queueMs, 0n)
      return answer(false, 0n, maxOf(1n, overflowMs, maxWait > 0n ? queueMs - maxWait : 0n))
    }
    if (after <= this.cap) return answer(true, 0n, 0n)
    if (maxWait > 0n && fits && overflowMs <= maxWait) return answer(true, overflowMs, 0n)
    return answer(false, 0n, maxOf(1n, maxWait > 0n && fits ? overflowMs - maxWait : overflowMs))
  }
}

/** One step of generated traffic: a time step, a cost chosen from what is left, a queue. */
export interface ExactStep {
  readonly dtMs: number
  /** `share` of the burst, or what is left (`left`) plus `extra`. */
  readonly cost: { readonly share: number } | { readonly left: true; readonly extra: number }
  readonly maxWaitMs: number
}

const windows = fc.oneof(
  fc.constantFrom(1, 7, 1000, 60_000, 3_600_000, 86_400_000, 2 ** 31 - 1),
  fc.integer({ min: 1, max: 2 ** 31 - 1 }),
)

/**
 * Params across the whole exact range: any window up to the longest duration, any limit up
 * to `Number.MAX_SAFE_INTEGER`, and a burst up to the largest the range allows for them (most
 * often near it), with the most a reservation may wait.
 */
export const exactParams: fc.Arbitrary<{ p: AlgorithmParams; maxWaitMs: number }> = fc
  .record({
    windowMs: windows,
    limit: fc.oneof(
      fc.integer({ min: 1, max: 1000 }),
      fc.integer({ min: 1, max: Number.MAX_SAFE_INTEGER }),
      fc.integer({ min: 1, max: 2 ** 40 }),
    ),
    perWindow: fc.boolean(),
    burstBits: fc.double({ min: 0, max: 1, noNaN: true }),
    waitShare: fc.double({ min: 0, max: 1, noNaN: true }),
  })
  .map(({ windowMs, limit, perWindow, burstBits, waitShare }) => {
    // Half of the rates are a whole number per millisecond (the refill never leaves a fraction).
    const l = perWindow ? Math.max(1, Math.floor(limit / windowMs)) * windowMs : limit
    const lim = Number.isSafeInteger(l) ? l : limit
    const { scale, perMs } = exactRate(lim, windowMs)
    const most = Math.floor(MAX_EXACT_SCALED / scale)
    const burst = Math.max(
      1,
      Math.min(most, Math.floor(2 ** (Math.log2(most) * burstBits ** 0.25))),
    )
    // A reservation may hold the burst plus maxWait of refill: both within the range.
    const waitRoom = Math.floor((MAX_EXACT_SCALED - burst * scale) / perMs)
    const maxWaitMs = Math.min(2 ** 31 - 1, Math.floor(waitRoom * waitShare ** 2))
    return { p: { limit: lim, windowMs, burst }, maxWaitMs }
  })

/** Traffic for `p`: steps of 0, a few ms, or up to the time a full burst takes to refill. */
export function exactSteps(p: AlgorithmParams, maxWaitMs: number): fc.Arbitrary<ExactStep[]> {
  const refillMs = Math.min(2 ** 40, Math.ceil((p.burst * p.windowMs) / p.limit))
  return fc.array(
    fc.record({
      dtMs: fc.oneof(
        fc.constant(0),
        fc.integer({ min: 1, max: 8 }),
        fc.integer({ min: 0, max: Math.max(1, refillMs) }),
      ),
      cost: fc.oneof(
        fc.double({ min: 0, max: 1, noNaN: true }).map((share) => ({ share })),
        fc.integer({ min: -1, max: 1 }).map((extra) => ({ left: true as const, extra })),
      ),
      maxWaitMs: fc.oneof(
        fc.constant(0),
        fc.constant(0),
        fc.integer({ min: 0, max: maxWaitMs }),
        fc.constant(maxWaitMs),
      ),
    }),
    { minLength: 1, maxLength: 12 },
  )
}

/** Clock readings to start from: 0, an epoch time, and 2^52 ms. */
export const exactBases: fc.Arbitrary<number> = fc.constantFrom(0, 1_763_776_543_210, 2 ** 52)

/** The whole cost a step asks for, at least 1. */
export function stepCost(
  step: ExactStep,
  model: ExactBucket,
  p: AlgorithmParams,
  nowMs: number,
): number {
  if ('share' in step.cost) return Math.max(1, Math.floor(step.cost.share * p.burst))
  return Math.max(1, model.left(nowMs) + step.cost.extra)
}
