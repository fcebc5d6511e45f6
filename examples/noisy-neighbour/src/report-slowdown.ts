import { ADAPTIVE_RULE_ID, WORK_MS } from './rules.js'
import type { SlowdownResult, SlowdownRun, SlowdownRunKind } from './run-slowdown.js'
import { refusedBy } from './slowdown-stats.js'
import { formatSlowdownTable } from './slowdown-table.js'
import { percentile, succeeded } from './stats.js'
import { esc, lineChart, niceAxis, NOISY_COLOUR, WELL_COLOURS } from './svg-chart.js'
import type { Series } from './svg-chart.js'

const RUN_COLOURS: Record<SlowdownRunKind, string> = {
  none: '#94a3b8',
  static: '#f59e0b',
  adaptive: '#2563eb',
}
const BUCKET_MS = 500
const WIDE = 1140

function buckets(durationMs: number): number[] {
  return Array.from({ length: Math.ceil(durationMs / BUCKET_MS) }, (_, i) => i * BUCKET_MS)
}

/** A value per bucket, plotted at the bucket's middle. */
function perBucket(
  durationMs: number,
  value: (from: number, to: number) => number | undefined,
): [number, number | undefined][] {
  return buckets(durationMs).map((from) => [
    from + BUCKET_MS / 2,
    value(from, Math.min(durationMs, from + BUCKET_MS)),
  ])
}

function band(result: SlowdownResult): { fromMs: number; toMs: number; label: string } {
  return {
    fromMs: result.slowdown.atMs,
    toMs: result.plan.durationMs,
    label: `database ${result.slowdown.factor}× slower`,
  }
}

/** The adaptive rule's limit and the requests in flight, over time. */
function limitChart(result: SlowdownResult, run: SlowdownRun): string {
  const points = run.timeline.filter((p) => p.limit !== undefined)
  const { max, ticks } = niceAxis(
    Math.max(10, ...points.map((p) => Math.max(p.limit ?? 0, p.inFlight ?? 0))),
  )
  const series: Series[] = [
    {
      name: 'limit on requests in flight',
      colour: '#1d4ed8',
      width: 2.8,
      step: true,
      points: points.map((p) => [p.t, p.limit]),
    },
    {
      name: 'requests in flight',
      colour: '#60a5fa',
      width: 1.4,
      fill: true,
      points: points.map((p) => [p.t, p.inFlight]),
    },
  ]
  return lineChart({
    title: 'Adaptive rule: its limit follows the database',
    subtitle: `limiter.adaptive('${ADAPTIVE_RULE_ID}') every ${result.sampleMs} ms; the limit moves every 0.5 s`,
    width: 560,
    height: 300,
    durationMs: result.plan.durationMs,
    y: { max, ticks, format: String, label: 'slots' },
    series,
    band: band(result),
  })
}

/** p99 latency over time: the well-behaved clients' in each run, and the adaptive rule's own. */
function latencyChart(result: SlowdownResult): string {
  const { durationMs } = result.plan
  const series: Series[] = result.runs.map((run) => ({
    name: `well-behaved p99, ${run.summary.label}`,
    colour: RUN_COLOURS[run.kind],
    width: run.kind === 'adaptive' ? 2.6 : 1.8,
    points: perBucket(durationMs, (from, to) => {
      const lat = run.summary.samples
        .filter((s) => !s.noisy && s.t >= from && s.t < to)
        .map((s) => s.latencyMs)
      return lat.length === 0 ? undefined : percentile(lat, 99)
    }),
  }))
  const adaptive = result.runs.find((r) => r.kind === 'adaptive')
  if (adaptive) {
    series.push({
      name: 'p99 the adaptive rule measured',
      colour: '#1e3a8a',
      width: 1.4,
      dash: '4 3',
      step: true,
      points: adaptive.timeline.map((p) => [p.t, p.percentileMs]),
    })
  }
  return lineChart({
    title: 'p99 latency per 0.5 s',
    subtitle: 'by when a request was first sent; retries and their waits included',
    width: 560,
    height: 300,
    durationMs,
    y: {
      max: 10_000,
      logMin: 10,
      ticks: [10, 30, 100, 300, 1000, 3000, 10_000],
      format: (v) => (v >= 1000 ? `${v / 1000}s` : `${v}ms`),
      label: 'ms, log',
    },
    series,
    band: band(result),
    rules: [{ y: result.targetMs, label: `target ${result.targetMs} ms`, colour: '#1e3a8a' }],
  })
}

/** Each client's requests answered 200 per second, and the neighbour's refusals, in one run. */
function clientsChart(
  result: SlowdownResult,
  run: SlowdownRun,
  axis: { max: number; ticks: number[] },
): string {
  const { durationMs } = result.plan
  const clients = [...new Set(run.summary.samples.map((s) => s.client))].sort()
  const well = clients.filter((c) => c !== 'noisy')
  const rate = (client: string) =>
    perBucket(
      durationMs,
      (from, to) =>
        (run.summary.samples.filter(
          (s) => s.client === client && s.t >= from && s.t < to && succeeded(s.status),
        ).length *
          1000) /
        (to - from),
    )
  const series: Series[] = well.map((c, i) => ({
    name: `${c} admitted`,
    colour: WELL_COLOURS[i % WELL_COLOURS.length]!,
    width: 1.4,
    points: rate(c),
  }))
  series.push({ name: 'noisy admitted', colour: NOISY_COLOUR, width: 2.8, points: rate('noisy') })
  if (run.kind !== 'none') {
    series.push({
      name: 'noisy refused',
      colour: NOISY_COLOUR,
      width: 1.6,
      dash: '5 4',
      points: perBucket(
        durationMs,
        (from, to) =>
          ((refusedBy(run.timeline, 'noisy', to) - refusedBy(run.timeline, 'noisy', from)) * 1000) /
          (to - from),
      ),
    })
  }
  const { max, ticks } = axis
  return lineChart({
    title: `${run.summary.label}: requests answered 200 per second, per client`,
    subtitle:
      run.kind === 'none'
        ? 'nothing is refused; after the slowdown everyone waits in the database queue, the well-behaved clients retry'
        : `by when each was sent; "refused": the limiter's ${run.kind === 'static' ? '429s' : '503s'} to the neighbour; the four well-behaved lines lie on one another`,
    width: WIDE,
    height: 230,
    durationMs,
    y: { max, ticks, format: String, label: 'per s' },
    series,
    band: band(result),
  })
}

/**
 * The slowdown scenario's part of the report: what ran, the adaptive limit, p99 over time,
 * each client's admitted rate in each run, and the table.
 *
 * @param result - the three runs
 * @returns an HTML fragment
 */
export function renderSlowdownSection(result: SlowdownResult): string {
  const { plan, slowdown } = result
  const adaptive = result.runs.find((r) => r.kind === 'adaptive')
  const top = Math.max(
    plan.noisyItemsRps,
    ...result.runs.flatMap((run) =>
      buckets(plan.durationMs).map(
        (from) =>
          (run.summary.samples.filter((s) => s.noisy && s.t >= from && s.t < from + BUCKET_MS)
            .length *
            1000) /
          BUCKET_MS,
      ),
    ),
  )
  // One scale for the three runs, so their charts compare at a glance.
  const axis = niceAxis(top)
  return `<h2>The database slows down: static rule or adaptive rule</h2>
<p class="meta">Same traffic three times: ${plan.wellClients} well-behaved clients at ${plan.wellItemsRps} lists a second each, one neighbour at ${plan.noisyItemsRps} lists a second, steady, for ${(plan.durationMs / 1000).toFixed(0)} s.
At ${(slowdown.atMs / 1000).toFixed(1)} s every query starts holding its connection ${slowdown.factor}× as long (${WORK_MS.items} ms → ${WORK_MS.items * slowdown.factor} ms): the pool of 4 answered ${Math.round((4 * 1000) / WORK_MS.items)} lists a second, now ${Math.round((4 * 1000) / (WORK_MS.items * slowdown.factor))}.
The static rule is the per-client rule above (25 a second each); the adaptive rule holds the p99 under ${result.targetMs} ms by limiting requests in flight, refusing clients over their fair share first.</p>
<div class="row">${adaptive ? limitChart(result, adaptive) : ''}${latencyChart(result)}</div>
${result.runs.map((run) => clientsChart(result, run, axis)).join('\n')}
<pre>${esc(formatSlowdownTable(result))}</pre>`
}
