import { randomUUID } from 'node:crypto'
import { DbPool } from './db-pool.js'
import type { DbPoolOptions } from './db-pool.js'
import { startFleet } from './fleet.js'
import type { Framework, HostConfig } from './host.js'
import { DEMO_RULES } from './rules.js'
import { summarise } from './stats.js'
import type { RunSummary } from './stats.js'
import { DEFAULT_PLAN, runTraffic } from './traffic.js'
import type { TrafficPlan } from './traffic.js'

/** Options of {@link runDemo}; every one has a default. */
export interface DemoOptions {
  /** Length of each of the two runs. */
  readonly durationMs?: number | undefined
  readonly framework?: Framework | undefined
  readonly store?: 'memory' | 'redis' | undefined
  readonly redisUrl?: string | undefined
  /** App processes behind a round-robin proxy (1: one in-process host). */
  readonly hosts?: number | undefined
  /** Base URL of a rules service the hosts poll; static rules when absent. */
  readonly rulesUrl?: string | undefined
  /** Overrides of the traffic plan. */
  readonly plan?: Partial<TrafficPlan> | undefined
  /** Progress lines. */
  readonly log?: ((line: string) => void) | undefined
}

/** The simulated database: 4 connections; a query waits at most 1 s for one. */
export const POOL: DbPoolOptions = { size: 4, acquireTimeoutMs: 1000, maxQueue: 200 }

/** Both runs of the demo. */
export interface DemoResult {
  readonly options: Required<Omit<DemoOptions, 'plan' | 'log' | 'redisUrl' | 'rulesUrl'>> & {
    readonly rulesFrom: 'static' | 'rules service'
  }
  readonly plan: TrafficPlan
  readonly without: RunSummary
  readonly with: RunSummary
}

async function runOnce(
  label: string,
  config: HostConfig,
  hosts: number,
  plan: TrafficPlan,
): Promise<RunSummary> {
  const pool = new DbPool(POOL)
  const fleet = await startFleet(config, hosts, pool)
  try {
    const traffic = await runTraffic(fleet.url, plan)
    const decisions = await fleet.decisions()
    return summarise({
      label,
      samples: traffic.samples,
      noisySkipped: traffic.noisySkipped,
      pool: pool.stats(),
      decisions: decisions.byClient,
      spike: { fromMs: plan.spikeFrom * plan.durationMs, toMs: plan.spikeTo * plan.durationMs },
      sendWindowMs: traffic.sendWindowMs,
      decisionWindowMs:
        decisions.span === undefined ? 0 : decisions.span.lastAt - decisions.span.firstAt,
    })
  } finally {
    await fleet.close()
    pool.close()
  }
}

interface Setup {
  readonly plan: TrafficPlan
  readonly base: HostConfig
  readonly hosts: number
}

function setup(options: DemoOptions): Setup {
  const plan: TrafficPlan = {
    ...DEFAULT_PLAN,
    ...options.plan,
    durationMs: options.durationMs ?? options.plan?.durationMs ?? DEFAULT_PLAN.durationMs,
  }
  return { plan, base: baseHostConfig(options), hosts: options.hosts ?? 1 }
}

/**
 * What every run of a scenario serves with (the runs differ in the limiter): the framework,
 * the store, a Redis key prefix of this run's own, and the demo's rules.
 */
export function baseHostConfig(
  options: Pick<DemoOptions, 'framework' | 'store' | 'redisUrl' | 'rulesUrl'>,
): HostConfig {
  return {
    framework: options.framework ?? 'express',
    limiter: 'none',
    store: options.store ?? 'memory',
    redisUrl: options.redisUrl,
    redisPrefix: `fg-demo-${randomUUID().slice(0, 8)}`,
    rules: DEMO_RULES,
    rulesUrl: options.rulesUrl,
  }
}

/**
 * Runs the traffic once, with or without Floodgate: half of {@link runDemo}, for tests that
 * need only one side.
 *
 * @param limiter - `floodgate` or `none`
 * @param options - duration, framework, store, hosts, rules
 * @returns the run's summary
 */
export function runScenario(
  limiter: 'none' | 'floodgate',
  options: DemoOptions = {},
): Promise<RunSummary> {
  const { plan, base, hosts } = setup(options)
  const label = limiter === 'none' ? 'without limiter' : 'with Floodgate'
  return runOnce(label, { ...base, limiter }, hosts, plan)
}

/**
 * Runs the same traffic twice against the same service: first with no limiter, then behind
 * Floodgate, and returns both summaries.
 *
 * @param options - duration, framework, store, hosts, rules
 * @returns the two runs
 */
export async function runDemo(options: DemoOptions = {}): Promise<DemoResult> {
  const log = options.log ?? (() => {})
  const { plan, base, hosts } = setup(options)
  const { framework, store } = base
  const seconds = (plan.durationMs / 1000).toFixed(0)
  log(`run 1/2: ${seconds} s without a limiter (${framework}, ${hosts} host(s))`)
  const without = await runOnce('without limiter', base, hosts, plan)
  log(`run 2/2: ${seconds} s with Floodgate (${store} store)`)
  const withLimiter = await runOnce(
    'with Floodgate',
    { ...base, limiter: 'floodgate' },
    hosts,
    plan,
  )
  return {
    options: {
      durationMs: plan.durationMs,
      framework,
      store,
      hosts,
      rulesFrom: options.rulesUrl === undefined ? 'static' : 'rules service',
    },
    plan,
    without,
    with: withLimiter,
  }
}
