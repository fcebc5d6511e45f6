import { EPSILON, type AlgorithmName, type AlgorithmParams } from '../algorithms/algorithm.js'
import { CONCURRENCY_RETRY_AFTER_MS } from '../algorithms/concurrency.js'

/*
 * Brute-force reference models, one per algorithm, written from each algorithm's definition
 * and independently of the packed implementations in ../algorithms: every model keeps the
 * plain list of what happened (admitted takes and refunds with their times) and recomputes
 * everything from that list on every question. Waits, retry hints and reset times are not
 * computed by formula but searched for: "the first whole millisecond at which the same
 * request would pass" and "the first millisecond at which the state is fresh".
 *
 * They are slow on purpose (O(events) per question, a binary search on top) and only meant
 * for tests: the store conformance suite compares every Store against them.
 */

/** One decision of a reference model: the fields of `AlgorithmResult`. */
export interface ReferenceResult {
  allowed: boolean
  waitMs: number
  limit: number
  remaining: number
  resetMs: number
  /** `Infinity` when the request can never pass (a cost above the capacity). */
  retryAfterMs: number
}

/** A reference limiter for one key: the same questions as `Algorithm`, answered by brute force. */
export interface ReferenceLimiter {
  /**
   * Decide a request of `cost` at `nowMs`; with `commit` (the default) an admitted request is
   * recorded. `maxWaitMs > 0` allows a reservation, as in `Algorithm.consume`.
   */
  consume(cost: number, nowMs: number, maxWaitMs?: number, commit?: boolean): ReferenceResult
  /** Give back `cost` units at `nowMs` (a released slot or an abandoned reservation). */
  refund(cost: number, nowMs: number): void
}

/** Builds a {@link ReferenceLimiter} for one algorithm. */
export interface ReferenceModel {
  readonly algorithm: AlgorithmName
  /** Whether the algorithm supports reservations (mirrors `Algorithm.canReserve`). */
  readonly canReserve: boolean
  /**
   * A fresh reference limiter for `params`.
   *
   * @param params - the same params the algorithm under test gets
   * @returns a reference limiter with an empty history
   */
  create(params: AlgorithmParams): ReferenceLimiter
}

/** One entry of a model's history. */
interface Event {
  readonly atMs: number
  readonly kind: 'take' | 'refund'
  readonly cost: number
}

/** What an algorithm's definition says, computed from a history. */
interface Definition {
  /** The capacity advertised as `limit`. */
  readonly capacity: number
  /** Whether a request of `cost` at `t` may proceed (with `maxWaitMs`: possibly after a wait). */
  passes(events: readonly Event[], t: number, cost: number, maxWaitMs: number): boolean
  /** For a passing request: how long it waits (0 unless it was reserved or shaped). */
  waitMs(events: readonly Event[], t: number, cost: number, maxWaitMs: number): number
  /** Whole units left at `t`. */
  remaining(events: readonly Event[], t: number): number
  /** Whether the history has no effect any more at `t`. */
  fresh(events: readonly Event[], t: number): boolean
  /** Whether the request can ever pass (else its retry hint is `Infinity`). */
  possible(cost: number): boolean
}

/**
 * The first whole number `d >= from` with `test(d)` true, for a `test` that stays true once
 * it is true; `Infinity` if there is none below 2^42.
 */
function firstTrue(from: number, test: (d: number) => boolean): number {
  if (test(from)) return from
  let no = from
  let step = 1
  while (!test(from + step)) {
    no = from + step
    step *= 2
    if (step > 2 ** 42) return Number.POSITIVE_INFINITY
  }
  let yes = from + step
  while (yes - no > 1) {
    const mid = Math.floor((no + yes) / 2)
    if (test(mid)) yes = mid
    else no = mid
  }
  return yes
}

class Reference implements ReferenceLimiter {
  private readonly events: Event[] = []

  constructor(
    private readonly definition: Definition,
    private readonly constantRetryMs?: number,
  ) {}

  consume(cost: number, nowMs: number, maxWaitMs = 0, commit = true): ReferenceResult {
    const d = this.definition
    const allowed = d.passes(this.events, nowMs, cost, maxWaitMs)
    const history = allowed
      ? [...this.events, { atMs: nowMs, kind: 'take' as const, cost }]
      : this.events
    let retryAfterMs = 0
    if (!allowed) {
      retryAfterMs =
        this.constantRetryMs ??
        (d.possible(cost)
          ? firstTrue(1, (ms) => d.passes(this.events, nowMs + ms, cost, maxWaitMs))
          : Number.POSITIVE_INFINITY)
    }
    const result: ReferenceResult = {
      allowed,
      waitMs: allowed ? d.waitMs(this.events, nowMs, cost, maxWaitMs) : 0,
      limit: d.capacity,
      remaining: d.remaining(history, nowMs),
      resetMs:
        this.constantRetryMs === undefined ? firstTrue(0, (ms) => d.fresh(history, nowMs + ms)) : 0,
      retryAfterMs,
    }
    if (allowed && commit) this.events.push({ atMs: nowMs, kind: 'take', cost })
    return result
  }

  refund(cost: number, nowMs: number): void {
    this.events.push({ atMs: nowMs, kind: 'refund', cost })
  }
}

const floorUnits = (x: number): number => Math.max(0, Math.floor(x + EPSILON))

/**
 * Token bucket by simulation: start full, and replay the history, refilling at
 * `limit / windowMs` per millisecond (never above `burst`, never for time going backwards),
 * taking and giving back tokens. The balance may go negative (a reservation's debt).
 */
function tokensAt(p: AlgorithmParams, events: readonly Event[], t: number): number {
  let tokens = p.burst
  let clock = Number.NEGATIVE_INFINITY
  const refillTo = (at: number): void => {
    if (at > clock) {
      if (clock !== Number.NEGATIVE_INFINITY) {
        tokens += ((at - clock) * p.limit) / p.windowMs
        if (tokens >= p.burst - EPSILON) tokens = p.burst
      }
      clock = at
    }
  }
  for (const e of events) {
    refillTo(e.atMs)
    tokens = e.kind === 'take' ? tokens - e.cost : Math.min(p.burst, tokens + e.cost)
  }
  refillTo(t)
  return tokens
}

function tokenBucketDefinition(p: AlgorithmParams): Definition {
  const fitsAt = (events: readonly Event[], t: number, cost: number): boolean =>
    tokensAt(p, events, t) - cost >= -EPSILON
  return {
    capacity: p.burst,
    possible: (cost) => cost <= p.burst + EPSILON,
    // With a wait allowed, the request passes when it would fit `maxWaitMs` later (nothing
    // else happening meanwhile), and the bucket can ever hold it.
    passes: (events, t, cost, maxWaitMs) =>
      fitsAt(events, t, cost) ||
      (maxWaitMs > 0 && cost <= p.burst + EPSILON && fitsAt(events, t + maxWaitMs, cost)),
    waitMs: (events, t, cost) => firstTrue(0, (ms) => fitsAt(events, t + ms, cost)),
    remaining: (events, t) => floorUnits(tokensAt(p, events, t)),
    fresh: (events, t) => tokensAt(p, events, t) >= p.burst - EPSILON,
  }
}

/** Leaky bucket by simulation: water poured in by takes, drained at `limit / windowMs` per ms. */
function levelAt(p: AlgorithmParams, events: readonly Event[], t: number): number {
  let level = 0
  let clock = Number.NEGATIVE_INFINITY
  const drainTo = (at: number): void => {
    if (at > clock) {
      if (clock !== Number.NEGATIVE_INFINITY) {
        level -= ((at - clock) * p.limit) / p.windowMs
        if (level <= EPSILON) level = 0
      }
      clock = at
    }
  }
  for (const e of events) {
    drainTo(e.atMs)
    level = e.kind === 'take' ? level + e.cost : Math.max(0, level - e.cost)
  }
  drainTo(t)
  return level
}

function leakyBucketDefinition(p: AlgorithmParams): Definition {
  const fits = (events: readonly Event[], t: number, cost: number): boolean =>
    levelAt(p, events, t) + cost <= p.burst + EPSILON
  const drained = (events: readonly Event[], t: number): boolean => levelAt(p, events, t) <= EPSILON
  return {
    capacity: p.burst,
    possible: (cost) => cost <= p.burst + EPSILON,
    // Meter: the water must fit. Shaper (a wait allowed): it must also be its turn within
    // `maxWaitMs`, i.e. the water ahead of it drained by then.
    passes: (events, t, cost, maxWaitMs) =>
      fits(events, t, cost) && (maxWaitMs <= 0 || drained(events, t + maxWaitMs)),
    waitMs: (events, t, _cost, maxWaitMs) =>
      maxWaitMs > 0 ? firstTrue(0, (ms) => drained(events, t + ms)) : 0,
    remaining: (events, t) => floorUnits(p.burst - levelAt(p, events, t)),
    fresh: (events, t) => drained(events, t),
  }
}

/**
 * Fixed window by walking the windows one by one: each window starts with what the last one
 * held beyond `limit` (a reservation's carry), plus the takes and refunds inside it. A clock
 * that goes backwards stays in the latest window.
 */
function countAt(p: AlgorithmParams, events: readonly Event[], t: number): number {
  let window = Number.NEGATIVE_INFINITY
  let count = 0
  const moveTo = (at: number): void => {
    const w = Math.floor(at / p.windowMs)
    if (count <= 0) {
      count = 0
      window = w
      return
    }
    while (window < w && count > 0) {
      window += 1
      count = Math.max(0, count - p.limit)
    }
    if (window < w) window = w
  }
  for (const e of events) {
    moveTo(e.atMs)
    count = e.kind === 'take' ? count + e.cost : Math.max(0, count - e.cost)
  }
  moveTo(t)
  return count
}

function fixedWindowDefinition(p: AlgorithmParams): Definition {
  const fitsAt = (events: readonly Event[], t: number, cost: number): boolean =>
    countAt(p, events, t) + cost <= p.limit + EPSILON
  return {
    capacity: p.limit,
    possible: (cost) => cost <= p.limit + EPSILON,
    passes: (events, t, cost, maxWaitMs) =>
      fitsAt(events, t, cost) ||
      (maxWaitMs > 0 && cost <= p.limit + EPSILON && fitsAt(events, t + maxWaitMs, cost)),
    waitMs: (events, t, cost) => firstTrue(0, (ms) => fitsAt(events, t + ms, cost)),
    remaining: (events, t) => floorUnits(p.limit - countAt(p, events, t)),
    fresh: (events, t) => countAt(p, events, t) <= EPSILON,
  }
}

/**
 * Sliding window log by its definition: the list of every admitted unit's timestamp, and a
 * count of those in `(t - windowMs, t]`. A refund forgets the newest units. A clock that
 * goes backwards stands still at the newest timestamp.
 */
function unitTimes(events: readonly Event[]): number[] {
  const times: number[] = []
  for (const e of events) {
    const units = e.cost > EPSILON ? Math.ceil(e.cost - EPSILON) : 0
    if (e.kind === 'take') {
      const last = times.length > 0 ? times[times.length - 1]! : e.atMs
      for (let i = 0; i < units; i++) times.push(Math.max(e.atMs, last))
    } else {
      for (let i = 0; i < units && times.length > 0; i++) times.pop()
    }
  }
  return times
}

function slidingLogDefinition(p: AlgorithmParams): Definition {
  const capacity = Math.max(1, Math.ceil(p.limit - EPSILON))
  const inWindow = (events: readonly Event[], t: number): number => {
    const times = unitTimes(events)
    const now = times.length > 0 ? Math.max(t, times[times.length - 1]!) : t
    return times.filter((at) => at > now - p.windowMs && at <= now).length
  }
  const units = (cost: number): number => (cost > EPSILON ? Math.ceil(cost - EPSILON) : 0)
  return {
    capacity,
    possible: (cost) => units(cost) <= capacity,
    passes: (events, t, cost) => inWindow(events, t) + units(cost) <= capacity,
    waitMs: () => 0,
    remaining: (events, t) => capacity - inWindow(events, t),
    fresh: (events, t) => inWindow(events, t) === 0,
  }
}

/**
 * Sliding window counter by its definition: sum the history per aligned window (a refund
 * takes from its own window, never below 0), then weigh the previous window by the share of
 * it that the sliding window still overlaps. A clock that goes backwards stays in the latest
 * window.
 */
function estimateAt(p: AlgorithmParams, events: readonly Event[], t: number): number {
  const perWindow = new Map<number, number>()
  let latest = Number.NEGATIVE_INFINITY
  for (const e of events) {
    latest = Math.max(latest, Math.floor(e.atMs / p.windowMs))
    const sum = perWindow.get(latest) ?? 0
    perWindow.set(latest, e.kind === 'take' ? sum + e.cost : Math.max(0, sum - e.cost))
  }
  const window = Math.max(latest, Math.floor(t / p.windowMs))
  const elapsed = Math.max(0, t - window * p.windowMs)
  const prev = perWindow.get(window - 1) ?? 0
  const curr = perWindow.get(window) ?? 0
  return prev * (1 - elapsed / p.windowMs) + curr
}

function slidingCounterDefinition(p: AlgorithmParams): Definition {
  return {
    capacity: p.limit,
    possible: (cost) => cost <= p.limit + EPSILON,
    passes: (events, t, cost) => estimateAt(p, events, t) + cost <= p.limit + EPSILON,
    waitMs: () => 0,
    remaining: (events, t) => floorUnits(p.limit - estimateAt(p, events, t)),
    fresh: (events, t) => estimateAt(p, events, t) <= EPSILON,
  }
}

/** Concurrency by its definition: the units taken minus the units given back (never below 0). */
function inFlight(events: readonly Event[]): number {
  let n = 0
  for (const e of events) n = e.kind === 'take' ? n + e.cost : Math.max(0, n - e.cost)
  return n
}

function concurrencyDefinition(p: AlgorithmParams): Definition {
  return {
    capacity: p.limit,
    possible: (cost) => cost <= p.limit + EPSILON,
    passes: (events, _t, cost) => inFlight(events) + cost <= p.limit + EPSILON,
    waitMs: () => 0,
    remaining: (events) => floorUnits(p.limit - inFlight(events)),
    fresh: (events) => inFlight(events) <= EPSILON,
  }
}

function model(
  algorithm: AlgorithmName,
  canReserve: boolean,
  define: (p: AlgorithmParams) => Definition,
  constantRetryMs?: number,
): ReferenceModel {
  return {
    algorithm,
    canReserve,
    create: (params) => new Reference(define(params), constantRetryMs),
  }
}

/**
 * One brute-force reference model per algorithm. GCRA's model is the token bucket's: the two
 * must admit exactly the same requests.
 */
export const referenceModels: readonly ReferenceModel[] = [
  model('token-bucket', true, tokenBucketDefinition),
  model('gcra', true, tokenBucketDefinition),
  model('fixed-window', true, fixedWindowDefinition),
  model('sliding-window-log', false, slidingLogDefinition),
  model('sliding-window-counter', false, slidingCounterDefinition),
  model('leaky-bucket', true, leakyBucketDefinition),
  model('concurrency', false, concurrencyDefinition, CONCURRENCY_RETRY_AFTER_MS),
]

/**
 * The reference model of one algorithm.
 *
 * @param algorithm - the algorithm's name
 * @returns its brute-force reference model
 * @example
 * ```ts
 * const ref = referenceModel('sliding-window-log').create({ limit: 10, windowMs: 1000, burst: 10 })
 * ref.consume(1, 900).allowed // true
 * ```
 */
export function referenceModel(algorithm: AlgorithmName): ReferenceModel {
  const found = referenceModels.find((m) => m.algorithm === algorithm)
  if (found === undefined) throw new TypeError(`no reference model for ${String(algorithm)}`)
  return found
}
