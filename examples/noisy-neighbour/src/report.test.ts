import { describe, expect, it } from 'vitest'
import { renderReport } from './report.js'
import type { DemoResult } from './run-demo.js'
import type { SlowdownResult, SlowdownRun, SlowdownRunKind, TimelinePoint } from './run-slowdown.js'
import { summarisePhases } from './slowdown-stats.js'
import { formatSlowdownTable } from './slowdown-table.js'
import { summarise } from './stats.js'
import { formatTable } from './table.js'
import { DEFAULT_PLAN, SLOWDOWN_PLAN } from './traffic.js'
import type { Sample } from './traffic.js'

function fakeResult(): DemoResult {
  const samples: Sample[] = []
  for (let t = 0; t < 10_000; t += 100) {
    samples.push({
      client: 'well-1',
      noisy: false,
      endpoint: 'items',
      t,
      latencyMs: 20,
      status: 200,
      attempts: 1,
    })
    samples.push({
      client: 'noisy',
      noisy: true,
      endpoint: 'items',
      t,
      latencyMs: 2,
      status: t % 200 ? 429 : 200,
      attempts: 1,
    })
  }
  const pool = {
    busyMsByClient: { 'well-1': 100, noisy: 300 },
    timeouts: 0,
    peakQueue: 1,
    maxWaitMs: 0,
  }
  const spike = { fromMs: 2000, toMs: 8500 }
  const run = (label: string) =>
    summarise({
      label,
      samples,
      noisySkipped: 0,
      pool,
      decisions: {},
      spike,
      sendWindowMs: 10_000,
      decisionWindowMs: 10_000,
    })
  return {
    options: {
      durationMs: 10_000,
      framework: 'express',
      store: 'memory',
      hosts: 1,
      rulesFrom: 'static',
    },
    plan: DEFAULT_PLAN,
    without: run('without limiter'),
    with: run('with Floodgate'),
  }
}

/** Three runs of the slowdown scenario, 8 s, slowing at 4 s: made-up but shaped like one. */
function fakeSlowdown(): SlowdownResult {
  const atMs = 4000
  const run = (kind: SlowdownRunKind, label: string): SlowdownRun => {
    const samples: Sample[] = []
    for (let t = 0; t < 8000; t += 125) {
      const after = t >= atMs
      samples.push({
        client: 'well-1',
        noisy: false,
        endpoint: 'items',
        t,
        latencyMs: after ? (kind === 'adaptive' ? 180 : 900) : 21,
        status: 200,
        attempts: 1,
      })
    }
    for (let t = 0; t < 8000; t += 20) {
      const refused = kind === 'static' ? t % 40 === 0 : kind === 'adaptive' && t >= atMs
      samples.push({
        client: 'noisy',
        noisy: true,
        endpoint: 'items',
        t,
        latencyMs: refused ? 2 : 21,
        status: refused ? (kind === 'static' ? 429 : 503) : 200,
        attempts: 1,
      })
    }
    const timeline: TimelinePoint[] = []
    for (let t = 0; t <= 8000; t += 250) {
      const refused = samples.filter((s) => s.noisy && s.t < t && s.status !== 200).length
      timeline.push({
        t,
        limit: kind === 'adaptive' ? (t < atMs ? 24 : 12) : undefined,
        inFlight: kind === 'adaptive' ? (t < atMs ? 2 : 10) : undefined,
        percentileMs: kind === 'adaptive' ? (t < atMs ? 22 : 190) : undefined,
        dbBusy: 2,
        dbQueued: 0,
        decisions: kind === 'none' ? {} : { noisy: { admitted: 0, refused } },
      })
    }
    const summary = summarise({
      label,
      samples,
      noisySkipped: 0,
      pool: { busyMsByClient: {}, timeouts: 0, peakQueue: 0, maxWaitMs: 0 },
      decisions: {},
      spike: { fromMs: 0, toMs: 8000 },
      sendWindowMs: 8000,
      decisionWindowMs: 8000,
    })
    return { kind, summary, timeline, ...summarisePhases(samples, timeline, atMs, 8000) }
  }
  return {
    options: { framework: 'express', store: 'memory' },
    rulesFrom: 'static',
    plan: SLOWDOWN_PLAN,
    slowdown: { atMs, factor: 4 },
    targetMs: 200,
    sampleMs: 250,
    runs: [
      run('none', 'without limiter'),
      run('static', 'static rule'),
      run('adaptive', 'adaptive rule'),
    ],
  }
}

describe('the report', () => {
  it('is one self-contained HTML file with inline SVG charts', () => {
    const html = renderReport({ noisyNeighbour: fakeResult(), slowdown: fakeSlowdown() })
    expect(html.startsWith('<!doctype html>')).toBe(true)
    expect(html).not.toMatch(/<script|<link|src=/)
    // The only URL is the SVG namespace.
    expect(
      html.match(/https?:\/\/[^"\s]+/g)?.filter((u) => u !== 'http://www.w3.org/2000/svg'),
    ).toEqual([])
    // 5 for the noisy-neighbour scenario, 5 for the slowdown.
    expect(html.match(/<svg /g)).toHaveLength(10)
    expect(html).toContain('without limiter: latency of each request')
    expect(html).toContain("with Floodgate: noisy neighbour's requests per 0.5 s")
    expect(html).toContain('Share of the database')
    expect(html).toContain('Adaptive rule: its limit follows the database')
    expect(html).toContain('adaptive rule: requests answered 200 per second, per client')
  })

  it('draws one scenario alone', () => {
    const html = renderReport({ slowdown: fakeSlowdown() })
    expect(html.match(/<svg /g)).toHaveLength(5)
    expect(html).not.toContain('latency of each request')
    // One line per series, with its points: the limit sampled every 250 ms over 8 s.
    expect(html).toMatch(/data-series="limit on requests in flight" data-points="33"/)
    // The rate charts' axis ends at its top tick (no tick beyond the plot).
    const rates = html.split('<figure>').filter((f) => f.includes('answered 200 per second'))
    expect(rates).toHaveLength(3)
    for (const chart of rates) {
      const ticks = [...chart.matchAll(/text-anchor="end">(\d+)<\/text>/g)].map((m) => Number(m[1]))
      expect(ticks).toEqual([0, 20, 40, 60, 80])
    }
  })

  it('the slowdown table has the three runs, before and after', () => {
    const table = formatSlowdownTable(fakeSlowdown())
    expect(table.split('\n')[0]).toMatch(/without limiter\s+static rule\s+adaptive rule$/)
    expect(table).toMatch(/p99 latency, after\s+900 ms\s+900 ms\s+180 ms/)
    expect(table).toMatch(/refused by the limiter, before\s+–\s+50\.0 %\s+0\.0 %/)
    expect(table).toMatch(/refused by the limiter, after\s+–\s+50\.0 %\s+100\.0 %/)
    expect(table).toMatch(/limit on requests in flight, before\s+–\s+–\s+24/)
    expect(table).toMatch(/limit on requests in flight, after\s+–\s+–\s+12/)
  })

  it('the table has both runs side by side', () => {
    const table = formatTable(fakeResult())
    expect(table.split('\n')[0]).toMatch(/without limiter\s+with Floodgate$/)
    expect(table).toMatch(/success rate\s+100\.0 %\s+100\.0 %/)
    expect(table).toMatch(/noisy\s+75\.0 %\s+75\.0 %/)
  })
})
