import { existsSync } from 'node:fs'
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { Socket } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'
import { chromium } from 'playwright-core'
import { describe, expect, it } from 'vitest'
import { renderReport } from '../src/report.js'
import { runDemo, runScenario } from '../src/run-demo.js'
import type { DemoResult } from '../src/run-demo.js'
import { runSlowdown } from '../src/run-slowdown.js'
import type { SlowdownResult, SlowdownRun, TimelinePoint } from '../src/run-slowdown.js'
import type { RunSummary } from '../src/stats.js'
import { ADAPTIVE_TARGET_MS, EXPORT_COST, UNITS_PER_SECOND } from '../src/rules.js'

// One file, so the demo runs never overlap each other: each is a load test of this machine.

const REDIS_URL = process.env['REDIS_URL'] ?? 'redis://127.0.0.1:6379'

/** Whether something accepts TCP connections at the Redis URL's host and port. */
function reachable(url: string): Promise<boolean> {
  const { hostname, port } = new URL(url)
  return new Promise((resolve) => {
    const socket = new Socket()
    const done = (ok: boolean): void => {
      socket.destroy()
      resolve(ok)
    }
    socket.setTimeout(500, () => done(false))
    socket.once('error', () => done(false))
    socket.connect(Number(port || 6379), hostname, () => done(true))
  })
}

const redisUp = await reachable(REDIS_URL)
// Skipped without Redis, except under CI, where a missing Redis must fail the build.
const itRedis = redisUp || process.env['CI'] === 'true' ? it : it.skip

/** Limiter units the noisy client was admitted for: a list costs 1, an export EXPORT_COST. */
function noisyUnits(run: RunSummary): number {
  return run.samples
    .filter((s) => s.noisy && s.status >= 200 && s.status < 300)
    .reduce((n, s) => n + (s.endpoint === 'export' ? EXPORT_COST : 1), 0)
}

/**
 * Most one limit can admit in a run: the budget over the real time the limiter was deciding
 * (a busy machine stretches it past the run's duration, and the bucket refills meanwhile)
 * plus the queue's 200 ms, the burst (16), and two exports' worth of slack. One host
 * measures about 64 units in 2 s (some 82 allowed); two hosts with local limits about 112.
 */
function oneLimit(run: RunSummary, durationMs: number): number {
  const windowMs = Math.max(durationMs, run.decisionWindowMs) + 200
  return (UNITS_PER_SECOND * windowMs) / 1000 + 16 + 2 * EXPORT_COST
}

// Debian's chromium, driven by playwright-core (which never downloads a browser of its own);
// `node scripts/ensure-chromium.mjs` installs it. Required under CI.
const CHROMIUM = process.env['CHROMIUM_PATH'] ?? '/usr/bin/chromium'
const hasChromium = existsSync(CHROMIUM)
if (!hasChromium && process.env['CI'] === 'true') {
  throw new Error(`the report test needs chromium at ${CHROMIUM} under CI=true`)
}

/** The database queue's longest length among the samples in [from, to). */
function peakQueue(timeline: readonly TimelinePoint[], from: number, to: number): number {
  return Math.max(0, ...timeline.filter((p) => p.t >= from && p.t < to).map((p) => p.dbQueued))
}

// The runs of the scenarios, kept for the report test at the end of the file.
let noisyResult: DemoResult | undefined
let slowdownResult: SlowdownResult | undefined

describe('the noisy-neighbour demo', () => {
  it('shows its claims: Floodgate protects the well-behaved clients and throttles the noisy one', async () => {
    const durationMs = 4000
    noisyResult = await runDemo({ durationMs, framework: 'express' })
    const { without, with: limited } = noisyResult

    // Same traffic both times.
    expect(limited.well.requests).toBe(without.well.requests)
    expect(limited.noisy.sent + limited.noisy.skipped).toBe(
      without.noisy.sent + without.noisy.skipped,
    )

    // Without a limiter the database is overloaded: queries time out, clients must retry.
    expect(without.pool.timeouts).toBeGreaterThan(0)
    expect(without.well.retries).toBeGreaterThan(0)

    // With Floodgate the well-behaved clients succeed at least as often, and faster.
    expect(limited.well.successRate).toBeGreaterThanOrEqual(without.well.successRate)
    expect(limited.well.successRate).toBeGreaterThan(0.95)
    expect(limited.well.p99Ms).toBeLessThan(without.well.p99Ms)
    expect(limited.well.p50Ms).toBeLessThan(without.well.p50Ms)
    expect(limited.pool.timeouts).toBeLessThan(without.pool.timeouts)

    // The noisy client is throttled: mostly refused with 429, its database share cut, and
    // admitted no more than its limit allows.
    expect(limited.noisy.rejected).toBeGreaterThan(limited.noisy.sent / 2)
    expect(limited.share['noisy']).toBeLessThan(without.share['noisy']!)
    expect(noisyUnits(limited)).toBeLessThanOrEqual(oneLimit(limited, durationMs))
  })

  describe.each(['fastify', 'koa'] as const)('on %s', (framework) => {
    it('throttles the noisy client and keeps the others whole', async () => {
      const durationMs = 2000
      const limited = await runScenario('floodgate', { durationMs, framework })
      expect(limited.noisy.rejected).toBeGreaterThan(0)
      // Without a limiter the neighbour takes over half of the database.
      expect(limited.share['noisy']).toBeLessThan(0.5)
      expect(limited.well.successRate).toBeGreaterThan(0.95)
      expect(noisyUnits(limited)).toBeLessThanOrEqual(oneLimit(limited, durationMs))
    })
  })

  describe('on a fleet of 2 hosts behind a round-robin proxy', () => {
    const durationMs = 2000

    it('memory store: each host limits alone, so the fleet admits up to twice the limit', async () => {
      const limited = await runScenario('floodgate', { durationMs, hosts: 2 })
      expect(limited.noisy.rejected).toBeGreaterThan(0)
      expect(noisyUnits(limited)).toBeGreaterThan(oneLimit(limited, durationMs))
      expect(noisyUnits(limited)).toBeLessThanOrEqual(2 * oneLimit(limited, durationMs))
    })

    itRedis('redis store: the fleet shares one limit', async () => {
      const limited = await runScenario('floodgate', {
        durationMs,
        hosts: 2,
        store: 'redis',
        redisUrl: REDIS_URL,
      })
      expect(limited.noisy.rejected).toBeGreaterThan(0)
      expect(noisyUnits(limited)).toBeLessThanOrEqual(oneLimit(limited, durationMs))
    })
  })
})

describe('the slowdown scenario', () => {
  // 6 s: the database slows at 3 s; the adaptive limit moves every 0.5 s.
  const durationMs = 6000

  it('the adaptive limit follows the database; the static rule is wrong on one side of it', async () => {
    // Without a limiter the pool times out queries (the first test shows it): two runs suffice.
    slowdownResult = await runSlowdown({ durationMs, runs: ['static', 'adaptive'] })
    const [fixed, adaptive] = slowdownResult.runs as [SlowdownRun, SlowdownRun]
    const { atMs } = slowdownResult.slowdown
    expect(fixed.kind).toBe('static')
    expect(adaptive.kind).toBe('adaptive')
    // Same traffic both times.
    expect(adaptive.summary.well.requests).toBe(fixed.summary.well.requests)
    expect(adaptive.summary.noisy.sent + adaptive.summary.noisy.skipped).toBe(
      fixed.summary.noisy.sent + fixed.summary.noisy.skipped,
    )

    // The adaptive rule: nothing refused while the database is healthy; after the slowdown
    // the limit falls, the neighbour is shed, and the well-behaved clients keep succeeding
    // (the floor docs/demo.md gives: 95 % together, 90 % each).
    const before = adaptive.before.adaptive!
    const after = adaptive.after.adaptive!
    expect(adaptive.before.noisy.refusedShare).toBeLessThan(0.05)
    expect(after.limit).toBeLessThan(before.limit)
    expect(adaptive.after.noisy.refusedShare).toBeGreaterThan(0.5)
    expect(adaptive.after.well.successRate).toBeGreaterThanOrEqual(0.95)
    expect(adaptive.after.well.minClientSuccessRate).toBeGreaterThanOrEqual(0.9)
    // The p99 it measured rose with the database's latency, and the shedding brought it back
    // towards the target.
    expect(after.percentileMs).toBeGreaterThan(before.percentileMs)
    expect(after.percentileMs).toBeLessThan(3 * ADAPTIVE_TARGET_MS)

    // The static rule: too tight before (it refuses the neighbour while the database has
    // room: the adaptive run served it all), too loose after (the database queue keeps
    // growing, and the well-behaved clients wait longer than under the adaptive rule).
    expect(fixed.before.noisy.refusedShare).toBeGreaterThan(0.3)
    expect(peakQueue(fixed.timeline, durationMs - 1000, durationMs)).toBeGreaterThan(
      peakQueue(fixed.timeline, atMs, atMs + 1000),
    )
    expect(fixed.after.well.p99Ms).toBeGreaterThan(ADAPTIVE_TARGET_MS)
    expect(fixed.after.well.p50Ms).toBeGreaterThan(adaptive.after.well.p50Ms)
  })
})

describe.skipIf(!hasChromium)('the HTML report in chromium', () => {
  it('draws every chart with the data of the runs, without errors', async () => {
    expect(noisyResult).toBeDefined()
    expect(slowdownResult).toBeDefined()
    const slowdown = slowdownResult!
    const dir = await mkdtemp(join(tmpdir(), 'fg-demo-report-'))
    const file = join(dir, 'report.html')
    await writeFile(file, renderReport({ noisyNeighbour: noisyResult, slowdown }))
    const browser = await chromium.launch({
      executablePath: CHROMIUM,
      args: ['--headless', '--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-sync'],
    })
    try {
      const page = await browser.newPage({ viewport: { width: 1200, height: 900 } })
      const errors: string[] = []
      page.on('pageerror', (err) => errors.push(err.message))
      page.on('console', (msg) => {
        if (msg.type() === 'error') errors.push(msg.text())
      })
      const requests: string[] = []
      page.on('request', (req) => requests.push(req.url()))
      await page.goto(pathToFileURL(file).href)

      const titles = await page.locator('svg text.title').allTextContents()
      expect(titles).toEqual(
        expect.arrayContaining([
          'without limiter: latency of each request',
          'with Floodgate: latency of each request',
          'Share of the database (busy connection time) per client',
          'Adaptive rule: its limit follows the database',
          'p99 latency per 0.5 s',
          'static rule: requests answered 200 per second, per client',
          'adaptive rule: requests answered 200 per second, per client',
        ]),
      )
      expect(await page.locator('svg').count()).toBe(5 + 2 + slowdown.runs.length)

      // Every series is drawn: a path the browser laid out, with the points of the data.
      const series = await page.locator('path.series').evaluateAll((paths) =>
        paths.map((p) => {
          const path = p as SVGPathElement
          const box = path.getBBox()
          const length = path.getTotalLength()
          return {
            chart: path.ownerSVGElement?.getAttribute('aria-label') ?? '',
            name: path.dataset['series'] ?? '',
            points: Number(path.dataset['points']),
            width: box.width,
            startY: path.getPointAtLength(0).y,
            endY: path.getPointAtLength(length).y,
          }
        }),
      )
      const inChart = (chart: string) => series.filter((s) => s.chart === chart)
      const buckets = Math.ceil(slowdown.plan.durationMs / 500)
      const limitLine = inChart('Adaptive rule: its limit follows the database').find(
        (s) => s.name === 'limit on requests in flight',
      )!
      const adaptive = slowdown.runs.find((r) => r.kind === 'adaptive')!
      expect(limitLine.points).toBe(adaptive.timeline.filter((p) => p.limit !== undefined).length)
      expect(limitLine.width).toBeGreaterThan(300)
      // The limit ends lower than it starts: drawn lower, at a larger y.
      expect(limitLine.endY).toBeGreaterThan(limitLine.startY)
      expect(inChart('p99 latency per 0.5 s').map((s) => s.name)).toEqual([
        'well-behaved p99, static rule',
        'well-behaved p99, adaptive rule',
        'p99 the adaptive rule measured',
      ])
      for (const run of slowdown.runs) {
        const lines = inChart(`${run.summary.label}: requests answered 200 per second, per client`)
        expect(lines.map((s) => s.name)).toEqual([
          'well-1 admitted',
          'well-2 admitted',
          'well-3 admitted',
          'well-4 admitted',
          'noisy admitted',
          'noisy refused',
        ])
        for (const line of lines) {
          expect(line.points).toBe(buckets)
          expect(line.width).toBeGreaterThan(900)
        }
      }
      // The legends name every series.
      const legend = await page.locator('g.legend-item text').allTextContents()
      expect(legend).toEqual(
        expect.arrayContaining(['limit on requests in flight', 'noisy refused']),
      )
      // Self-contained: the page itself is the only thing loaded.
      expect(requests).toEqual([pathToFileURL(file).href])
      expect(errors).toEqual([])
    } finally {
      await browser.close()
      await rm(dir, { recursive: true, force: true })
    }
  }, 60_000)
})
