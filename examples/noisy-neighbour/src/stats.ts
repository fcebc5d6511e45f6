import type { PoolStats } from './db-pool.js'
import type { DecisionCounts } from './host.js'
import { EXPORT_COST } from './rules.js'
import type { Sample } from './traffic.js'

/** Nearest-rank percentile of unsorted values; 0 for none. */
export function percentile(values: readonly number[], p: number): number {
  if (values.length === 0) return 0
  const sorted = [...values].sort((a, b) => a - b)
  const rank = Math.min(sorted.length, Math.max(1, Math.ceil((p / 100) * sorted.length)))
  return sorted[rank - 1]!
}

/** How a group of requests fared. */
export interface LatencySummary {
  readonly requests: number
  /** Share of requests that finally succeeded (2xx), retries included. */
  readonly successRate: number
  readonly p50Ms: number
  readonly p99Ms: number
  /** Extra attempts the clients made (retries). */
  readonly retries: number
}

/** What the noisy neighbour got. */
export interface NoisySummary {
  /** Requests it sent. */
  readonly sent: number
  /** Requests it did not send: too many of its own were in flight. */
  readonly skipped: number
  /** Answered 2xx. */
  readonly admitted: number
  /** Of the admitted, how many waited in Floodgate's queue first. */
  readonly queued: number
  /** Refused by the limiter (429). */
  readonly rejected: number
  /** Failed by the overloaded service (503) or timed out. */
  readonly failed: number
  /** Limiter units admitted per second during the spike (a list 1, an export 8). */
  readonly spikeUnitsPerSecond: number
}

/** One run (without or with the limiter), summarised. */
export interface RunSummary {
  readonly label: string
  readonly well: LatencySummary
  readonly perClient: Record<string, LatencySummary>
  readonly noisy: NoisySummary
  /** Share of the database's busy time each client got (0..1). */
  readonly share: Record<string, number>
  readonly pool: PoolStats
  readonly decisions: Record<string, DecisionCounts>
  readonly samples: readonly Sample[]
  /** Real time over which the requests went out (see TrafficResult.sendWindowMs). */
  readonly sendWindowMs: number
  /**
   * Real time from the limiter's first decision to its last. A busy machine stretches it
   * past the run's duration, and token buckets refill all the while.
   */
  readonly decisionWindowMs: number
}

/** Whether a response status is a success (2xx). */
export function succeeded(status: number): boolean {
  return status >= 200 && status < 300
}

/** Success rate (2xx), p50, p99 and retries of a group of samples. */
export function latency(samples: readonly Sample[]): LatencySummary {
  const ok = samples.filter((s) => succeeded(s.status)).length
  return {
    requests: samples.length,
    successRate: samples.length === 0 ? 1 : ok / samples.length,
    p50Ms: percentile(
      samples.map((s) => s.latencyMs),
      50,
    ),
    p99Ms: percentile(
      samples.map((s) => s.latencyMs),
      99,
    ),
    retries: samples.reduce((n, s) => n + Math.max(0, s.attempts - 1), 0),
  }
}

/** What {@link summarise} works from. */
export interface RunRecord {
  /** The run's name in the table. */
  readonly label: string
  /** What the clients saw. */
  readonly samples: readonly Sample[]
  /** Noisy requests not sent (in-flight cap). */
  readonly noisySkipped: number
  /** The database's own account. */
  readonly pool: PoolStats
  /** The limiter's decisions per client. */
  readonly decisions: Record<string, DecisionCounts>
  /** Start and end of the noisy client's spike, ms since the run started. */
  readonly spike: { readonly fromMs: number; readonly toMs: number }
  /** Real time over which the requests went out. */
  readonly sendWindowMs: number
  /** Real time from the limiter's first decision to its last (0 without a limiter). */
  readonly decisionWindowMs: number
}

/**
 * Summarises one run.
 *
 * @param record - what the run produced
 * @returns the summary
 */
export function summarise(record: RunRecord): RunSummary {
  const { label, samples, noisySkipped, pool, decisions, spike, sendWindowMs, decisionWindowMs } =
    record
  const well = samples.filter((s) => !s.noisy)
  const noisy = samples.filter((s) => s.noisy)
  const perClient: Record<string, LatencySummary> = {}
  for (const client of new Set(samples.map((s) => s.client))) {
    perClient[client] = latency(samples.filter((s) => s.client === client))
  }
  const busyTotal = Object.values(pool.busyMsByClient).reduce((a, b) => a + b, 0)
  const share: Record<string, number> = {}
  for (const [client, ms] of Object.entries(pool.busyMsByClient)) {
    share[client] = busyTotal === 0 ? 0 : ms / busyTotal
  }
  const noisyName = noisy[0]?.client ?? 'noisy'
  const spikeUnits = noisy
    .filter((s) => s.t >= spike.fromMs && s.t < spike.toMs && succeeded(s.status))
    .reduce((n, s) => n + (s.endpoint === 'export' ? EXPORT_COST : 1), 0)
  return {
    label,
    well: latency(well),
    perClient,
    noisy: {
      sent: noisy.length,
      skipped: noisySkipped,
      admitted: noisy.filter((s) => succeeded(s.status)).length,
      queued: decisions[noisyName]?.queue ?? 0,
      rejected: noisy.filter((s) => s.status === 429).length,
      failed: noisy.filter((s) => s.status !== 429 && (s.status < 200 || s.status >= 300)).length,
      spikeUnitsPerSecond: spikeUnits / Math.max(0.001, (spike.toMs - spike.fromMs) / 1000),
    },
    share,
    pool,
    decisions,
    samples,
    sendWindowMs,
    decisionWindowMs,
  }
}
