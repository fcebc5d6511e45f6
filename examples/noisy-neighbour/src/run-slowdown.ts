import { performance } from 'node:perf_hooks'
import { DbPool } from './db-pool.js'
import { startFleet } from './fleet.js'
import type { RunningFleet } from './fleet.js'
import type { Framework, HostConfig } from './host.js'
import { ADAPTIVE_RULE_ID, ADAPTIVE_RULES, ADAPTIVE_TARGET_MS } from './rules.js'
import { baseHostConfig, POOL } from './run-demo.js'
import { summarise } from './stats.js'
import type { RunSummary } from './stats.js'
import { summarisePhases } from './slowdown-stats.js'
import type { PhaseSummary } from './slowdown-stats.js'
import { runTraffic, SLOWDOWN_PLAN } from './traffic.js'
import type { TrafficPlan } from './traffic.js'

/** Options of {@link runSlowdown}; every one has a default. */
export interface SlowdownOptions {
  /** Length of each of the three runs (default 8 s). */
  readonly durationMs?: number | undefined
  readonly framework?: Framework | undefined
  /** Store of the static rule's run (the adaptive rule keeps its state on the host). */
  readonly store?: 'memory' | 'redis' | undefined
  readonly redisUrl?: string | undefined
  /** Rule set URL in a rules service for the static run; static rules in code when absent. */
  readonly rulesUrl?: string | undefined
  /** Rule set URL in a rules service for the adaptive run; in code when absent. */
  readonly adaptiveRulesUrl?: string | undefined
  /** When the database slows down, as a fraction of the duration (default 0.5). */
  readonly slowdownAt?: number | undefined
  /** How many times as long each query holds its connection after it (default 4). */
  readonly slowdownFactor?: number | undefined
  /** Overrides of the traffic plan. */
  readonly plan?: Partial<TrafficPlan> | undefined
  /** How often the time series is sampled (default 250 ms). */
  readonly sampleMs?: number | undefined
  /** Which of the three runs to make (default all three, in this order). */
  readonly runs?: readonly SlowdownRunKind[] | undefined
  /** Progress lines. */
  readonly log?: ((line: string) => void) | undefined
}

/** The three ways the same traffic is served. */
export type SlowdownRunKind = 'none' | 'static' | 'adaptive'

/** Limiter decisions of one client since the run started (cumulative). */
export interface ClientDecisions {
  /** Allowed at once, or queued first. */
  readonly admitted: number
  /** Refused (429 by the static rule, 503 by the adaptive one). */
  readonly refused: number
}

/** One sample of the time series, taken during the run. */
export interface TimelinePoint {
  /** Milliseconds since the traffic started. */
  readonly t: number
  /** The adaptive rule's limit on requests in flight (adaptive run only). */
  readonly limit?: number | undefined
  /** Requests in flight the adaptive rule counts (adaptive run only). */
  readonly inFlight?: number | undefined
  /** The p99 the adaptive rule measured over its last window (adaptive run only). */
  readonly percentileMs?: number | undefined
  /** Queries holding a connection and waiting for one. */
  readonly dbBusy: number
  readonly dbQueued: number
  /** The limiter's decisions per client so far (empty without a limiter). */
  readonly decisions: Readonly<Record<string, ClientDecisions>>
}

/** One of the three runs. */
export interface SlowdownRun {
  readonly kind: SlowdownRunKind
  readonly summary: RunSummary
  readonly timeline: readonly TimelinePoint[]
  /** Before and after the slowdown. */
  readonly before: PhaseSummary
  readonly after: PhaseSummary
}

/** The slowdown scenario: the same traffic three ways. */
export interface SlowdownResult {
  readonly options: { readonly framework: Framework; readonly store: 'memory' | 'redis' }
  readonly rulesFrom: 'static' | 'rules service'
  readonly plan: TrafficPlan
  /** When the database slowed down (ms since the start) and by what factor. */
  readonly slowdown: { readonly atMs: number; readonly factor: number }
  readonly targetMs: number
  readonly sampleMs: number
  readonly runs: readonly SlowdownRun[]
}

const LABELS: Record<SlowdownRunKind, string> = {
  none: 'without limiter',
  static: 'static rule',
  adaptive: 'adaptive rule',
}

/** Samples the run's state every `sampleMs` until stopped. */
function sampler(
  fleet: RunningFleet,
  pool: DbPool,
  decisions: () => Record<string, ClientDecisions>,
  start: number,
  sampleMs: number,
): { stop(): TimelinePoint[] } {
  const points: TimelinePoint[] = []
  const take = (): void => {
    const state = fleet.adaptive(ADAPTIVE_RULE_ID)
    const { busy, queued } = pool.load()
    points.push({
      t: performance.now() - start,
      limit: state?.limit,
      inFlight: state?.inFlight,
      percentileMs: state?.percentileMs,
      dbBusy: busy,
      dbQueued: queued,
      decisions: decisions(),
    })
  }
  take()
  const timer = setInterval(take, sampleMs)
  let stopped = false
  return {
    // Idempotent: the run stops it when the traffic ends, and again on the way out.
    stop: () => {
      if (!stopped) {
        stopped = true
        clearInterval(timer)
        take()
      }
      return points
    },
  }
}

async function runOnce(
  kind: SlowdownRunKind,
  config: HostConfig,
  plan: TrafficPlan,
  slowdown: { atMs: number; factor: number },
  sampleMs: number,
): Promise<SlowdownRun> {
  const pool = new DbPool(POOL)
  const fleet = await startFleet(config, 1, pool)
  const start = performance.now()
  const timer = setTimeout(() => pool.slowDown(slowdown.factor), slowdown.atMs)
  const sampling = sampler(fleet, pool, () => snapshot(fleet), start, sampleMs)
  try {
    const traffic = await runTraffic(fleet.url, plan)
    const timeline = sampling.stop()
    const fleetDecisions = await fleet.decisions()
    const summary = summarise({
      label: LABELS[kind],
      samples: traffic.samples,
      noisySkipped: traffic.noisySkipped,
      pool: pool.stats(),
      decisions: fleetDecisions.byClient,
      spike: { fromMs: plan.spikeFrom * plan.durationMs, toMs: plan.spikeTo * plan.durationMs },
      sendWindowMs: traffic.sendWindowMs,
      decisionWindowMs:
        fleetDecisions.span === undefined
          ? 0
          : fleetDecisions.span.lastAt - fleetDecisions.span.firstAt,
    })
    const phases = summarisePhases(summary.samples, timeline, slowdown.atMs, plan.durationMs)
    return { kind, summary, timeline, ...phases }
  } finally {
    clearTimeout(timer)
    sampling.stop()
    await fleet.close()
    pool.close()
  }
}

/** The host's decision counts so far, copied (the host keeps counting). */
function snapshot(fleet: RunningFleet): Record<string, ClientDecisions> {
  const out: Record<string, ClientDecisions> = {}
  for (const [client, c] of Object.entries(fleet.decisionsNow())) {
    out[client] = { admitted: c.allow + c.queue, refused: c.reject + c.drop }
  }
  return out
}

/**
 * The slowdown scenario: the database's queries take `slowdownFactor` times as long from the
 * middle of the run, so no number of requests a second is right both before and after. The
 * same traffic (four well-behaved clients and a heavier neighbour, steady) runs three times:
 * without a limiter, with the static per-client rule of the noisy-neighbour scenario, and
 * with an adaptive rule that follows the p99. Each run samples the adaptive limit, its
 * measured p99, the database's queue and each client's decisions over time.
 *
 * One in-process host: an adaptive limit is per host, and it is read live from its limiter.
 *
 * @param options - duration, framework, store, rules URLs, the slowdown
 * @returns the three runs
 */
export async function runSlowdown(options: SlowdownOptions = {}): Promise<SlowdownResult> {
  const log = options.log ?? (() => {})
  const plan: TrafficPlan = {
    ...SLOWDOWN_PLAN,
    ...options.plan,
    durationMs: options.durationMs ?? options.plan?.durationMs ?? SLOWDOWN_PLAN.durationMs,
  }
  const slowdown = {
    atMs: Math.round((options.slowdownAt ?? 0.5) * plan.durationMs),
    factor: options.slowdownFactor ?? 4,
  }
  const sampleMs = options.sampleMs ?? 250
  const base = baseHostConfig(options)
  const configs: Record<SlowdownRunKind, HostConfig> = {
    none: base,
    static: { ...base, limiter: 'floodgate' },
    adaptive: {
      ...base,
      limiter: 'floodgate',
      rules: ADAPTIVE_RULES,
      rulesUrl: options.adaptiveRulesUrl,
    },
  }
  const kinds = options.runs ?? (['none', 'static', 'adaptive'] as const)
  const runs: SlowdownRun[] = []
  const seconds = (plan.durationMs / 1000).toFixed(0)
  for (const [i, kind] of kinds.entries()) {
    log(
      `slowdown run ${i + 1}/${kinds.length}: ${seconds} s ${LABELS[kind]}; the database slows ${slowdown.factor}× at ${(slowdown.atMs / 1000).toFixed(1)} s`,
    )
    runs.push(await runOnce(kind, configs[kind], plan, slowdown, sampleMs))
  }
  return {
    options: { framework: base.framework, store: base.store },
    rulesFrom: options.rulesUrl === undefined ? 'static' : 'rules service',
    plan,
    slowdown,
    targetMs: ADAPTIVE_TARGET_MS,
    sampleMs,
    runs,
  }
}
