import { WORK_MS } from './rules.js'
import type { SlowdownResult, SlowdownRun } from './run-slowdown.js'
import type { PhaseSummary } from './slowdown-stats.js'
import { formatColumns, int, ms, pct } from './table.js'
import type { Row } from './table.js'

/**
 * The slowdown scenario's table: one column per run, each figure before and after the
 * database slowed down.
 *
 * @param result - the runs
 * @returns the table as text
 */
export function formatSlowdownTable(result: SlowdownResult): string {
  const { runs, plan, slowdown } = result
  const each = (label: string, get: (run: SlowdownRun) => string): Row => [label, ...runs.map(get)]
  const phases = (
    label: string,
    get: (phase: PhaseSummary, run: SlowdownRun) => string | undefined,
  ): Row[] => [
    each(`  ${label}, before`, (run) => get(run.before, run) ?? '–'),
    each(`  ${label}, after`, (run) => get(run.after, run) ?? '–'),
  ]
  const perSecond = (n: number, p: PhaseSummary): string =>
    ((n * 1000) / Math.max(1, p.toMs - p.fromMs)).toFixed(1)
  const rows: Row[] = [
    [
      `the database slows ${slowdown.factor}× at ${(slowdown.atMs / 1000).toFixed(1)} s (a list: ${WORK_MS.items} ms → ${WORK_MS.items * slowdown.factor} ms of a connection)`,
    ],
    [`well-behaved clients (${plan.wellClients} × ${plan.wellItemsRps} lists/s, retrying)`],
    ...phases('success rate', (p) => pct(p.well.successRate)),
    ...phases('p50 latency', (p) => ms(p.well.p50Ms)),
    ...phases('p99 latency', (p) => ms(p.well.p99Ms)),
    each('  retries, after', (run) => int(run.after.well.retries)),
    [`noisy neighbour (${plan.noisyItemsRps} lists/s, never retrying)`],
    ...phases('refused by the limiter', (p, run) =>
      run.kind === 'none' ? undefined : pct(p.noisy.refusedShare),
    ),
    ...phases('answered 200 per second', (p) => perSecond(p.noisy.served, p)),
    [`adaptive rule (p99 under ${result.targetMs} ms), settled: median of each phase's 2nd half`],
    ...phases('limit on requests in flight', (p) =>
      p.adaptive === undefined ? undefined : p.adaptive.limit.toFixed(0),
    ),
    ...phases('p99 it measured', (p) =>
      p.adaptive === undefined ? undefined : ms(p.adaptive.percentileMs),
    ),
    ['database (4 connections)'],
    each('  queries timed out in the pool', (run) => int(run.summary.pool.timeouts)),
    each('  longest wait for a connection', (run) => ms(run.summary.pool.maxWaitMs)),
  ]
  return formatColumns(['', ...runs.map((r) => r.summary.label)], rows)
}
