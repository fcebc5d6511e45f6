import { describe, expect, it } from 'vitest'
import { runDemo } from '../src/run-demo.js'
import type { RunSummary } from '../src/stats.js'
import { EXPORT_COST, UNITS_PER_SECOND } from '../src/rules.js'

/** Limiter units the noisy client was admitted for: a list costs 1, an export EXPORT_COST. */
function noisyUnits(run: RunSummary): number {
  return run.samples
    .filter((s) => s.noisy && s.status >= 200 && s.status < 300)
    .reduce((n, s) => n + (s.endpoint === 'export' ? EXPORT_COST : 1), 0)
}

describe('the noisy-neighbour demo', () => {
  it('shows its claims: Floodgate protects the well-behaved clients and throttles the noisy one', async () => {
    const durationMs = 4000
    const result = await runDemo({ durationMs, framework: 'express', hosts: 1 })
    const { without, with: limited } = result

    // Same traffic both times.
    expect(limited.well.requests).toBe(without.well.requests)
    expect(limited.noisy.sent).toBe(without.noisy.sent)

    // Without a limiter the database is overloaded: queries time out, clients must retry.
    expect(without.pool.timeouts).toBeGreaterThan(0)
    expect(without.well.retries).toBeGreaterThan(0)

    // With Floodgate the well-behaved clients succeed, faster, and nothing times out.
    expect(limited.well.successRate).toBe(1)
    expect(limited.well.successRate).toBeGreaterThanOrEqual(without.well.successRate)
    expect(limited.well.p99Ms).toBeLessThan(without.well.p99Ms)
    expect(limited.well.p50Ms).toBeLessThan(without.well.p50Ms)
    expect(limited.pool.timeouts).toBe(0)

    // The noisy client is throttled: refused with 429 past its share, its database share cut.
    expect(limited.noisy.rejected).toBeGreaterThan(limited.noisy.sent / 2)
    expect(limited.share['noisy']).toBeLessThan(without.share['noisy']!)
    // Its budget over the real time the requests went out (plus the queue's 200 ms), one
    // burst, and two exports' worth of slack.
    const windowMs = Math.max(durationMs, limited.sendWindowMs) + 200
    expect(noisyUnits(limited)).toBeLessThanOrEqual(
      (UNITS_PER_SECOND * windowMs) / 1000 + 16 + 2 * EXPORT_COST,
    )
    // Each well-behaved client was never refused.
    for (const [client, counts] of Object.entries(limited.decisions)) {
      if (client !== 'noisy') expect(counts.reject).toBe(0)
    }
  })
})
