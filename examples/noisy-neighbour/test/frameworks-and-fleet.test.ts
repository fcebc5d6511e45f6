import { Socket } from 'node:net'
import { describe, expect, it } from 'vitest'
import { runDemo } from '../src/run-demo.js'
import type { RunSummary } from '../src/stats.js'
import { EXPORT_COST, UNITS_PER_SECOND } from '../src/rules.js'

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
const itRedis = redisUp || process.env['CI'] === 'true' ? it : it.skip

function noisyUnits(run: RunSummary): number {
  return run.samples
    .filter((s) => s.noisy && s.status >= 200 && s.status < 300)
    .reduce((n, s) => n + (s.endpoint === 'export' ? EXPORT_COST : 1), 0)
}

const durationMs = 2000

/**
 * Most one limit admits in a run: the budget over the real time the requests went out (a
 * busy machine stretches it, and the bucket refills meanwhile) plus the queue's 200 ms, the
 * burst (16), and two exports' worth of slack. A single host measures about 64 units in 2 s
 * here (about 82 allowed), two hosts with local limits about 112.
 */
function oneLimit(run: RunSummary): number {
  return (
    (UNITS_PER_SECOND * (Math.max(durationMs, run.sendWindowMs) + 200)) / 1000 +
    16 +
    2 * EXPORT_COST
  )
}

describe.each(['fastify', 'koa'] as const)('the demo on %s', (framework) => {
  it('throttles the noisy client and keeps the others whole', async () => {
    const { without, with: limited } = await runDemo({ durationMs, framework })
    expect(limited.noisy.rejected).toBeGreaterThan(0)
    expect(limited.share['noisy']).toBeLessThan(without.share['noisy']!)
    expect(limited.well.successRate).toBe(1)
    expect(noisyUnits(limited)).toBeLessThanOrEqual(oneLimit(limited))
  })
})

describe('the demo on a fleet of 2 hosts behind a round-robin proxy', () => {
  it('memory store: each host limits alone, so the fleet admits up to twice the limit', async () => {
    const { with: limited } = await runDemo({ durationMs, hosts: 2 })
    expect(limited.noisy.rejected).toBeGreaterThan(0)
    expect(noisyUnits(limited)).toBeGreaterThan(oneLimit(limited))
    expect(noisyUnits(limited)).toBeLessThanOrEqual(2 * oneLimit(limited))
  })

  itRedis('redis store: the fleet shares one limit', async () => {
    const { with: limited } = await runDemo({
      durationMs,
      hosts: 2,
      store: 'redis',
      redisUrl: REDIS_URL,
    })
    expect(limited.noisy.rejected).toBeGreaterThan(0)
    expect(noisyUnits(limited)).toBeLessThanOrEqual(oneLimit(limited))
  })
})
