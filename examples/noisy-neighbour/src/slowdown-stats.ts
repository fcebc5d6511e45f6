import { latency, percentile, succeeded } from './stats.js'
import type { TimelinePoint } from './run-slowdown.js'
import type { Sample } from './traffic.js'

/** How the traffic fared in one phase of the slowdown scenario (before or after it). */
export interface PhaseSummary {
  /** The phase, in ms since the start (requests are counted by when they were first sent). */
  readonly fromMs: number
  readonly toMs: number
  /** The well-behaved clients together. */
  readonly well: {
    readonly requests: number
    /** Share answered 2xx in the end, retries included. */
    readonly successRate: number
    /** The lowest success rate of any one of them. */
    readonly minClientSuccessRate: number
    readonly p50Ms: number
    readonly p99Ms: number
    readonly retries: number
  }
  /** The neighbour (it never retries). */
  readonly noisy: {
    readonly sent: number
    readonly served: number
    /** Refused by the limiter (429 by the static rule, 503 by the adaptive one). */
    readonly refused: number
    /** `refused / sent`. */
    readonly refusedShare: number
  }
  /**
   * The adaptive rule's limit and measured p99 once settled: medians over the second half of
   * the phase (adaptive run only).
   */
  readonly adaptive: { readonly limit: number; readonly percentileMs: number } | undefined
}

const ok = (s: Sample): boolean => succeeded(s.status)

function median(values: readonly number[]): number | undefined {
  return values.length === 0 ? undefined : percentile(values, 50)
}

/**
 * The limiter's refusals of a client up to `t`, interpolated between the samples around it
 * (samples drift off the half-second marks, so the last one before a mark can be 250 ms old).
 *
 * @param timeline - the samples, in time order
 * @param client - the client's key
 * @param t - ms since the start
 * @returns refusals so far (fractional between samples)
 */
export function refusedBy(timeline: readonly TimelinePoint[], client: string, t: number): number {
  const at = (p: TimelinePoint): number => p.decisions[client]?.refused ?? 0
  let before: TimelinePoint | undefined
  for (const p of timeline) {
    if (p.t >= t) {
      if (p.t === t) return at(p)
      if (before === undefined) return 0
      return at(before) + ((at(p) - at(before)) * (t - before.t)) / (p.t - before.t)
    }
    before = p
  }
  return before === undefined ? 0 : at(before)
}

function phase(
  samples: readonly Sample[],
  timeline: readonly TimelinePoint[],
  fromMs: number,
  toMs: number,
  last: boolean,
): PhaseSummary {
  const inPhase = samples.filter((s) => s.t >= fromMs && s.t < toMs)
  const well = inPhase.filter((s) => !s.noisy)
  const noisy = inPhase.filter((s) => s.noisy)
  const rate = (group: readonly Sample[]): number =>
    group.length === 0 ? 1 : group.filter(ok).length / group.length
  const clients = [...new Set(well.map((s) => s.client))]
  const noisyName = noisy[0]?.client ?? 'noisy'
  // The last phase takes the refusals made after the schedule ended (requests still in flight).
  const refused =
    (last ? refusedBy(timeline, noisyName, Infinity) : refusedBy(timeline, noisyName, toMs)) -
    refusedBy(timeline, noisyName, fromMs)
  const settled = timeline.filter((p) => p.t >= (fromMs + toMs) / 2 && p.t < toMs)
  const limit = median(settled.flatMap((p) => (p.limit === undefined ? [] : [p.limit])))
  const p99 = median(settled.flatMap((p) => (p.percentileMs === undefined ? [] : [p.percentileMs])))
  return {
    fromMs,
    toMs,
    well: {
      ...latency(well),
      minClientSuccessRate: Math.min(
        1,
        ...clients.map((c) => rate(well.filter((s) => s.client === c))),
      ),
    },
    noisy: {
      sent: noisy.length,
      served: noisy.filter(ok).length,
      refused,
      refusedShare: noisy.length === 0 ? 0 : refused / noisy.length,
    },
    adaptive: limit === undefined ? undefined : { limit, percentileMs: p99 ?? 0 },
  }
}

/**
 * Splits a run of the slowdown scenario at the slowdown and summarises each side.
 *
 * @param samples - every request of the run
 * @param timeline - the time series sampled during it
 * @param atMs - when the database slowed down
 * @param durationMs - the run's length
 * @returns before and after
 */
export function summarisePhases(
  samples: readonly Sample[],
  timeline: readonly TimelinePoint[],
  atMs: number,
  durationMs: number,
): { before: PhaseSummary; after: PhaseSummary } {
  return {
    before: phase(samples, timeline, 0, atMs, false),
    after: phase(samples, timeline, atMs, durationMs, true),
  }
}
