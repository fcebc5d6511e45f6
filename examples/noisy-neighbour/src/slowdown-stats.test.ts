import { describe, expect, it } from 'vitest'
import type { TimelinePoint } from './run-slowdown.js'
import { refusedBy, summarisePhases } from './slowdown-stats.js'
import type { Sample } from './traffic.js'

const point = (t: number, refused: number, limit?: number): TimelinePoint => ({
  t,
  limit,
  percentileMs: limit === undefined ? undefined : 100,
  dbBusy: 0,
  dbQueued: 0,
  decisions: { noisy: { admitted: 0, refused } },
})

const sample = (client: string, t: number, status: number, latencyMs = 10): Sample => ({
  client,
  noisy: client === 'noisy',
  endpoint: 'items',
  t,
  latencyMs,
  status,
  attempts: status === 200 ? 1 : 2,
})

describe('refusedBy', () => {
  const timeline = [point(0, 0), point(260, 10), point(510, 30)]

  it('interpolates between the samples around a moment', () => {
    expect(refusedBy(timeline, 'noisy', 0)).toBe(0)
    expect(refusedBy(timeline, 'noisy', 130)).toBe(5)
    expect(refusedBy(timeline, 'noisy', 260)).toBe(10)
    expect(refusedBy(timeline, 'noisy', 385)).toBe(20)
    expect(refusedBy(timeline, 'noisy', 10_000)).toBe(30)
    expect(refusedBy(timeline, 'well-1', 385)).toBe(0)
  })
})

describe('summarisePhases', () => {
  it('splits the requests by when they were sent, and the limit by the half of each phase', () => {
    const samples = [
      sample('well-1', 100, 200),
      sample('well-2', 200, 200),
      sample('well-1', 600, 200, 300),
      sample('well-2', 700, 503, 900),
      sample('noisy', 100, 200),
      sample('noisy', 600, 503),
      sample('noisy', 700, 503),
    ]
    // Refusals are read at the phase boundaries (interpolated between samples, see above).
    const timeline = [
      point(0, 0, 20),
      point(250, 0, 24),
      point(500, 0, 24),
      point(750, 1, 16),
      point(1000, 2, 12),
    ]
    const { before, after } = summarisePhases(samples, timeline, 500, 1000)
    expect(before.well).toMatchObject({ requests: 2, successRate: 1, retries: 0 })
    expect(after.well).toMatchObject({
      requests: 2,
      successRate: 0.5,
      minClientSuccessRate: 0,
      p99Ms: 900,
      retries: 1,
    })
    expect(before.noisy).toEqual({ sent: 1, served: 1, refused: 0, refusedShare: 0 })
    expect(after.noisy).toEqual({ sent: 2, served: 0, refused: 2, refusedShare: 1 })
    // Settled: the median of the samples in the second half of each phase: [250, 500) and
    // [750, 1000).
    expect(before.adaptive?.limit).toBe(24)
    expect(after.adaptive?.limit).toBe(16)
  })
})
