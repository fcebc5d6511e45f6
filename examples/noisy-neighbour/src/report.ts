import { renderSlowdownSection } from './report-slowdown.js'
import type { DemoResult } from './run-demo.js'
import type { SlowdownResult } from './run-slowdown.js'
import type { RunSummary } from './stats.js'
import { esc, NOISY_COLOUR, WELL_COLOURS } from './svg-chart.js'
import { formatTable } from './table.js'

function colourOf(client: string, wellNames: readonly string[]): string {
  const i = wellNames.indexOf(client)
  return i === -1 ? NOISY_COLOUR : (WELL_COLOURS[i % WELL_COLOURS.length] ?? '#333')
}

interface Frame {
  readonly width: number
  readonly height: number
  readonly left: number
  readonly right: number
  readonly top: number
  readonly bottom: number
}

const FRAME: Frame = { width: 560, height: 300, left: 56, right: 12, top: 28, bottom: 42 }

function xScale(durationMs: number, f: Frame = FRAME): (t: number) => number {
  return (t) => f.left + (t / durationMs) * (f.width - f.left - f.right)
}

function timeAxis(durationMs: number, f: Frame = FRAME): string {
  const x = xScale(durationMs, f)
  const step = durationMs > 20_000 ? 5000 : durationMs > 6000 ? 2000 : 1000
  const ticks: string[] = []
  for (let t = 0; t <= durationMs; t += step) {
    ticks.push(
      `<line x1="${x(t)}" x2="${x(t)}" y1="${f.height - f.bottom}" y2="${f.height - f.bottom + 4}" stroke="#555"/>` +
        `<text x="${x(t)}" y="${f.height - f.bottom + 16}" text-anchor="middle">${t / 1000}s</text>`,
    )
  }
  return (
    `<line x1="${f.left}" x2="${f.width - f.right}" y1="${f.height - f.bottom}" y2="${f.height - f.bottom}" stroke="#555"/>` +
    ticks.join('')
  )
}

function spikeBand(result: DemoResult, labelled = true, f: Frame = FRAME): string {
  const x = xScale(result.plan.durationMs, f)
  const from = x(result.plan.spikeFrom * result.plan.durationMs)
  const to = x(result.plan.spikeTo * result.plan.durationMs)
  return (
    `<rect x="${from}" y="${f.top}" width="${to - from}" height="${f.height - f.top - f.bottom}" fill="#fee2e2" opacity="0.6"/>` +
    (labelled
      ? `<text x="${(from + to) / 2}" y="${f.top + 12}" text-anchor="middle" fill="#b91c1c">noisy neighbour spikes</text>`
      : '')
  )
}

/** Latency of every request over time, log scale, one colour per client. */
function latencyChart(run: RunSummary, result: DemoResult, wellNames: readonly string[]): string {
  const f = FRAME
  const x = xScale(result.plan.durationMs)
  const minMs = 1
  const maxMs = 10_000
  const y = (v: number): number => {
    const clamped = Math.min(maxMs, Math.max(minMs, v))
    const frac = Math.log10(clamped / minMs) / Math.log10(maxMs / minMs)
    return f.height - f.bottom - frac * (f.height - f.top - f.bottom)
  }
  const grid = [1, 10, 100, 1000, 10_000]
    .map(
      (v) =>
        `<line x1="${f.left}" x2="${f.width - f.right}" y1="${y(v)}" y2="${y(v)}" stroke="#e5e7eb"/>` +
        `<text x="${f.left - 6}" y="${y(v) + 4}" text-anchor="end">${v >= 1000 ? `${v / 1000}s` : `${v}ms`}</text>`,
    )
    .join('')
  // Noisy first, underneath; the well-behaved clients are the point of the chart.
  const ordered = [...run.samples].sort((a, b) => Number(b.noisy) - Number(a.noisy))
  const dots = ordered
    .map((s) => {
      const failed = s.status < 200 || s.status >= 300
      const colour = colourOf(s.client, wellNames)
      const r = s.noisy ? 1.6 : 2.4
      const opacity = s.noisy ? 0.25 : 0.85
      return failed && !s.noisy
        ? `<path d="M${(x(s.t) - 3).toFixed(1)} ${(y(s.latencyMs) - 3).toFixed(1)}l6 6m0 -6l-6 6" stroke="${colour}" stroke-width="1.5"/>`
        : `<circle cx="${x(s.t).toFixed(1)}" cy="${y(s.latencyMs).toFixed(1)}" r="${r}" fill="${colour}" fill-opacity="${opacity}"/>`
    })
    .join('')
  return svg(
    `${esc(run.label)}: latency of each request`,
    spikeBand(result) + grid + timeAxis(result.plan.durationMs) + dots,
  )
}

/** The noisy client's requests per half second, by outcome. */
function outcomeChart(run: RunSummary, result: DemoResult, peak: number): string {
  const f = FRAME
  const bucketMs = 500
  const buckets = Math.ceil(result.plan.durationMs / bucketMs)
  const kinds = [
    { name: 'admitted', colour: '#16a34a', test: (s: number) => s >= 200 && s < 300 },
    { name: 'rejected 429', colour: '#f59e0b', test: (s: number) => s === 429 },
    {
      name: 'failed 503/timeout',
      colour: '#dc2626',
      test: (s: number) => s !== 429 && (s < 200 || s >= 300),
    },
  ]
  const counts = Array.from({ length: buckets }, () => kinds.map(() => 0))
  for (const s of run.samples) {
    if (!s.noisy) continue
    const b = Math.min(buckets - 1, Math.floor(s.t / bucketMs))
    const k = kinds.findIndex((kind) => kind.test(s.status))
    counts[b]![k]!++
  }
  const x = xScale(result.plan.durationMs)
  const h = f.height - f.top - f.bottom
  const y = (v: number): number => f.height - f.bottom - (v / peak) * h
  const barWidth = x(bucketMs) - x(0) - 2
  const bars = counts
    .map((c, b) => {
      let base = 0
      return c
        .map((n, k) => {
          if (n === 0) return ''
          const rect = `<rect x="${(x(b * bucketMs) + 1).toFixed(1)}" y="${y(base + n).toFixed(1)}" width="${barWidth.toFixed(1)}" height="${(y(base) - y(base + n)).toFixed(1)}" fill="${kinds[k]!.colour}"/>`
          base += n
          return rect
        })
        .join('')
    })
    .join('')
  const grid = [0, 0.5, 1]
    .map((frac) => {
      const v = Math.round(peak * frac)
      return (
        `<line x1="${f.left}" x2="${f.width - f.right}" y1="${y(v)}" y2="${y(v)}" stroke="#e5e7eb"/>` +
        `<text x="${f.left - 6}" y="${y(v) + 4}" text-anchor="end">${v}</text>`
      )
    })
    .join('')
  const legend = kinds
    .map(
      (k, i) =>
        `<rect x="${f.left + i * 150}" y="${f.height - 12}" width="10" height="10" fill="${k.colour}"/>` +
        `<text x="${f.left + 14 + i * 150}" y="${f.height - 3}">${k.name}</text>`,
    )
    .join('')
  return svg(
    `${esc(run.label)}: noisy neighbour's requests per 0.5 s`,
    spikeBand(result, false) + grid + timeAxis(result.plan.durationMs) + bars + legend,
  )
}

/** Share of the database each client got, one stacked bar per run. */
function shareChart(result: DemoResult, wellNames: readonly string[]): string {
  const f: Frame = { ...FRAME, width: 1140, height: 150, left: 130 }
  const runs = [result.without, result.with]
  const w = f.width - f.left - f.right
  const clients = [...wellNames, 'noisy']
  const body = runs
    .map((run, i) => {
      const y = f.top + i * 48
      let at = 0
      const parts = clients
        .map((c) => {
          const share = run.share[c] ?? 0
          const x = f.left + at * w
          at += share
          const label =
            share > 0.06
              ? `<text x="${x + (share * w) / 2}" y="${y + 20}" text-anchor="middle" fill="#fff">${esc(c)} ${(share * 100).toFixed(0)}%</text>`
              : ''
          return `<rect x="${x}" y="${y}" width="${share * w}" height="30" fill="${colourOf(c, wellNames)}"/>${label}`
        })
        .join('')
      return `<text x="${f.left - 8}" y="${y + 20}" text-anchor="end">${esc(run.label)}</text>${parts}`
    })
    .join('')
  return svg('Share of the database (busy connection time) per client', body, f)
}

function svg(title: string, body: string, f: Frame = FRAME): string {
  return (
    `<figure><svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 ${f.width} ${f.height}" width="${f.width}" height="${f.height}" role="img" aria-label="${title}">` +
    `<text class="title" x="${f.left}" y="16" font-weight="600">${title}</text>${body}</svg></figure>`
  )
}

/** What the report shows: the scenarios that ran. */
export interface DemoReport {
  readonly noisyNeighbour?: DemoResult | undefined
  readonly slowdown?: SlowdownResult | undefined
}

/**
 * The noisy-neighbour scenario's part: latency over time per client, the noisy client's
 * admitted and rejected requests, the share of the database, and the table.
 */
function renderNoisySection(result: DemoResult): string {
  const wellNames = Object.keys(result.with.perClient)
    .filter((c) => c !== 'noisy')
    .sort()
  const runs = [result.without, result.with]
  // Round the axis up to a multiple of 20 (10 for small counts), so its labels read well.
  const roundUp = (v: number): number => {
    const step = v > 40 ? 20 : 10
    return Math.ceil(v / step) * step
  }
  const peak = roundUp(
    Math.max(
      10,
      ...runs.map((run) => {
        const per = new Map<number, number>()
        for (const s of run.samples) {
          if (!s.noisy) continue
          const b = Math.floor(s.t / 500)
          per.set(b, (per.get(b) ?? 0) + 1)
        }
        return Math.max(0, ...per.values())
      }),
    ),
  )
  const legend = [...wellNames, 'noisy']
    .map(
      (c) =>
        `<span class="key"><i style="background:${colourOf(c, wellNames)}"></i>${esc(c)}</span>`,
    )
    .join('')
  const o = result.options
  return `<h2>A noisy neighbour: no limiter or Floodgate</h2>
<p class="meta">Same traffic twice: ${result.plan.wellClients} well-behaved clients at ${result.plan.wellItemsRps} lists + ${result.plan.wellExportRps} export a second each; one neighbour spiking to ${result.plan.noisyItemsRps} lists + ${result.plan.noisyExportRps} exports a second.
Service: ${esc(o.framework)}, ${o.hosts} host(s), a database pool of 4 connections. Floodgate: ${esc(o.store)} store, rules ${o.rulesFrom === 'static' ? 'static (in code)' : 'from the rules service (PGlite)'}.</p>
<div>${legend} <span class="key">× = failed request of a well-behaved client</span></div>
<div class="row">${runs.map((r) => latencyChart(r, result, wellNames)).join('')}</div>
<div class="row">${runs.map((r) => outcomeChart(r, result, peak)).join('')}</div>
${shareChart(result, wellNames)}
<pre>${esc(formatTable(result))}</pre>`
}

/**
 * A self-contained HTML report of the scenarios that ran: inline SVG charts and the tables,
 * no script and no network.
 *
 * @param report - the results
 * @returns the HTML document
 */
export function renderReport(report: DemoReport): string {
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Floodgate noisy-neighbour demo</title>
<style>
body{font:14px/1.4 system-ui,sans-serif;margin:24px;color:#111;max-width:1180px}
h1{font-size:22px;margin:0 0 4px} h2{font-size:18px;margin:28px 0 4px} p.meta{color:#555;margin:0 0 16px}
.row{display:flex;gap:16px;flex-wrap:wrap} figure{margin:0 0 12px}
svg text{font-size:11px;fill:#333} svg text.title{font-size:13px} pre{background:#f8fafc;padding:12px;border:1px solid #e5e7eb;font-size:12px}
.key{margin-right:14px}.key i{display:inline-block;width:10px;height:10px;margin-right:4px;border-radius:50%}
</style></head><body>
<h1>Floodgate — noisy-neighbour demo</h1>
<p class="meta">Generated ${new Date().toISOString()}.</p>
${report.noisyNeighbour ? renderNoisySection(report.noisyNeighbour) : ''}
${report.slowdown ? renderSlowdownSection(report.slowdown) : ''}
</body></html>
`
}
