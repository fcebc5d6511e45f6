import { describe, expect, it } from 'vitest'
import { renderReport } from './report.js'
import type { DemoResult } from './run-demo.js'
import { summarise } from './stats.js'
import { formatTable } from './table.js'
import { DEFAULT_PLAN } from './traffic.js'
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

describe('the report', () => {
  it('is one self-contained HTML file with inline SVG charts', () => {
    const html = renderReport(fakeResult())
    expect(html.startsWith('<!doctype html>')).toBe(true)
    expect(html).not.toMatch(/<script|<link|src=/)
    // The only URL is the SVG namespace.
    expect(
      html.match(/https?:\/\/[^"\s]+/g)?.filter((u) => u !== 'http://www.w3.org/2000/svg'),
    ).toEqual([])
    expect(html.match(/<svg /g)).toHaveLength(5)
    expect(html).toContain('without limiter: latency of each request')
    expect(html).toContain("with Floodgate: noisy neighbour's requests per 0.5 s")
    expect(html).toContain('Share of the database')
  })

  it('the table has both runs side by side', () => {
    const table = formatTable(fakeResult())
    expect(table.split('\n')[0]).toMatch(/without limiter\s+with Floodgate$/)
    expect(table).toMatch(/success rate\s+100\.0 %\s+100\.0 %/)
    expect(table).toMatch(/noisy\s+75\.0 %\s+75\.0 %/)
  })
})
