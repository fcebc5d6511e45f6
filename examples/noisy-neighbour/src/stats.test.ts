import { describe, expect, it } from 'vitest'
import { percentile, summarise } from './stats.js'
import type { Sample } from './traffic.js'

describe('percentile', () => {
  it.each([
    [[], 50, 0],
    [[5], 99, 5],
    [[3, 1, 2, 4], 50, 2],
    [[1, 2, 3, 4, 5, 6, 7, 8, 9, 10], 99, 10],
    [[1, 2, 3, 4, 5, 6, 7, 8, 9, 10], 10, 1],
  ])('%j p%i = %i (nearest rank)', (values, p, expected) => {
    expect(percentile(values, p)).toBe(expected)
  })
})

describe('summarise', () => {
  const sample = (over: Partial<Sample>): Sample => ({
    client: 'well-1',
    noisy: false,
    endpoint: 'items',
    t: 0,
    latencyMs: 10,
    status: 200,
    attempts: 1,
    ...over,
  })

  it('counts outcomes, retries, shares and the spike units', () => {
    const samples = [
      sample({ latencyMs: 10 }),
      sample({ latencyMs: 30, attempts: 3 }),
      sample({ status: 503, latencyMs: 1000, attempts: 4 }),
      sample({ client: 'noisy', noisy: true, t: 150 }),
      sample({ client: 'noisy', noisy: true, t: 160, endpoint: 'export' }),
      sample({ client: 'noisy', noisy: true, t: 170, status: 429 }),
      sample({ client: 'noisy', noisy: true, t: 50, status: 0 }),
    ]
    const pool = {
      busyMsByClient: { 'well-1': 300, noisy: 900 },
      timeouts: 2,
      peakQueue: 5,
      maxWaitMs: 40,
    }
    const decisions = { noisy: { allow: 1, queue: 1, reject: 1, drop: 0 } }
    const run = summarise({
      label: 'with',
      samples,
      noisySkipped: 7,
      pool,
      decisions,
      spike: { fromMs: 100, toMs: 600 },
      sendWindowMs: 1000,
      decisionWindowMs: 1000,
    })
    expect(run.well).toEqual({
      requests: 3,
      successRate: 2 / 3,
      p50Ms: 30,
      p99Ms: 1000,
      retries: 5,
    })
    expect(run.noisy).toEqual({
      sent: 4,
      skipped: 7,
      admitted: 2,
      queued: 1,
      rejected: 1,
      failed: 1,
      // a list (1) and an export (8) admitted in 0.5 s of spike
      spikeUnitsPerSecond: 18,
    })
    expect(run.share).toEqual({ 'well-1': 0.25, noisy: 0.75 })
  })
})
