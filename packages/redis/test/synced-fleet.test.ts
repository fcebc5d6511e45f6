import type { ChildProcess } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { Redis } from 'ioredis'
import { afterAll, describe, expect, it } from 'vitest'
import { forkFleetHost } from './helpers/fleet-host.js'
import { REDIS_URL, deletePrefix, redisAvailable, uniquePrefix } from './helpers/redis.js'

const available = await redisAvailable()
const prefix = uniquePrefix('synced-fleet')
const HOSTS = 4
const RUN_MS = 3000
const worker = fileURLToPath(new URL('./fleet/synced-fleet-worker.ts', import.meta.url))

// 100 per second with a burst of 20, synced every 100 ms.
const rule = { algorithm: 'token-bucket', limit: 100, windowMs: 1000, burst: 20, stateId: 'tb' }
const syncMs = 100

interface Report {
  admitted: number
  offered: number
  /** Ms after the start of each admission. */
  times: number[]
  maxGapMs: number
  syncs: number
  failedSyncs: number
}

describe.skipIf(!available)(`a fleet of ${HOSTS} SyncedStore hosts on one Redis`, () => {
  const all: ChildProcess[][] = []
  afterAll(async () => {
    for (const c of all.flat()) if (c.exitCode === null) c.kill('SIGKILL')
    const admin = new Redis(REDIS_URL)
    await deletePrefix(admin, prefix)
    admin.disconnect()
  })

  // Together: every host starts at once with a full bucket. Staggered: a host joins every
  // 500 ms while the others already keep the key busy, so each joiner must be charged the
  // fleet's recent units on its first sync rather than spend a full bucket of its own.
  it.each([
    { scenario: 'together', staggerMs: 0 },
    { scenario: 'staggered', staggerMs: 500 },
  ])(
    '$scenario: over-admits no more than (hosts - 1) × (burst + rate × staleness) beyond one shared bucket',
    async ({ scenario, staggerMs }) => {
      const hosts = Array.from({ length: HOSTS }, () =>
        forkFleetHost<Report>(worker, {
          url: REDIS_URL,
          prefix,
          syncMs,
          rule,
          key: 'fleet-client',
        }),
      )
      const children = hosts.map((h) => h.child)
      all.push(children)
      const ready = hosts.map((h) => h.ready)
      const reports = hosts.map((h) => h.report)
      await Promise.all(ready)
      const originMs = Date.now() + 200
      const stopAtMs = originMs + RUN_MS
      children.forEach((c, i) =>
        c.send({ originMs, startAtMs: originMs + i * staggerMs, stopAtMs }),
      )
      const done = await Promise.all(reports)

      const rate = rule.limit / rule.windowMs
      const admitted = done.reduce((n, r) => n + r.admitted, 0)
      const offered = done.reduce((n, r) => n + r.offered, 0)
      // One bucket shared by the whole fleet admits its capacity plus the refill of the run.
      const shared = rule.burst + rate * RUN_MS
      // A host's view of another lags by at most its own sync gap plus the other's: the units
      // the others admitted in that window, at most burst + rate × window each, are not yet
      // charged to it (docs/distributed.md derives it). Staleness as measured, not as configured.
      const stalenessMs = 2 * Math.max(...done.map((r) => r.maxGapMs))
      const bound = (HOSTS - 1) * (rule.burst + rate * stalenessMs)
      // The same at every instant of the run: admitted so far against one bucket so far.
      const times = done.flatMap((r) => r.times).sort((x, y) => x - y)
      let peak = -Infinity
      let peakAtMs = 0
      times.forEach((t, i) => {
        const over = i + 1 - (rule.burst + rate * t)
        if (over > peak) [peak, peakAtMs] = [over, t]
      })
      // After the first second every bucket is long empty: from there one shared bucket would
      // admit only its refill, and the excess is the sync lag alone, without the cold start.
      const steadyFrom = times.findIndex((t) => t >= 1000)
      let steadyPeak = -Infinity
      for (let i = steadyFrom; i < times.length; i++) {
        steadyPeak = Math.max(steadyPeak, i - steadyFrom + 1 - rate * (times[i]! - 1000))
      }
      const figures = {
        admitted,
        offered,
        shared,
        overAdmitted: admitted - shared,
        peakOverAdmitted: Math.round(peak),
        peakAtMs,
        steadyPeakOverAdmitted: Math.round(steadyPeak),
        bound: Math.round(bound),
        nominalBound: (HOSTS - 1) * (rule.burst + rate * 2 * syncMs),
        localModeWouldAdmit: HOSTS * shared,
        stalenessMs,
        perHost: done.map((r) => r.admitted),
        syncs: done.map((r) => r.syncs),
        failedSyncs: done.map((r) => r.failedSyncs),
      }
      console.info(`synced fleet, ${scenario}`, JSON.stringify(figures))

      expect(done.every((r) => r.failedSyncs === 0)).toBe(true)
      expect(offered).toBeGreaterThan(4 * shared) // demand far above supply throughout
      expect(admitted).toBeLessThanOrEqual(shared + bound)
      expect(peak).toBeLessThanOrEqual(bound)
      // And it does not starve the fleet: most of what one bucket allows is admitted.
      expect(admitted).toBeGreaterThan(0.5 * shared)
      // Started together, the fleet converges on the shared bucket: the cold start is owed
      // back, and the sync lag is paid out of the fleet bucket's debt. A regression guard, not
      // a derived bound: runs here admitted 316 of 320 once hosts shared the refill after a
      // debt too; before that, one admitted 333 (+4.06 %).
      if (staggerMs === 0) expect(admitted).toBeLessThanOrEqual(1.05 * shared)
    },
    30_000,
  )

  // Bursts far above the limit, spaced further apart than the refill time (200 ms): one shared
  // bucket is full again at each and admits about one bucket per burst. Each host's local
  // bucket is full again too, yet the fleet must not admit a bucket per host per burst.
  it('bursts after a pause: the excess over one shared bucket does not grow burst after burst', async () => {
    const bursts = 4
    const burstMs = 10
    const everyMs = 500
    const hosts = Array.from({ length: HOSTS }, () =>
      forkFleetHost<Report>(worker, {
        url: REDIS_URL,
        prefix,
        syncMs,
        rule,
        key: 'bursty-client',
        burstMs,
        burstEveryMs: everyMs,
      }),
    )
    all.push(hosts.map((h) => h.child))
    await Promise.all(hosts.map((h) => h.ready))
    const originMs = Date.now() + 200
    const stopAtMs = originMs + bursts * everyMs
    for (const h of hosts) h.child.send({ originMs, startAtMs: originMs, stopAtMs })
    const done = await Promise.all(hosts.map((h) => h.report))
    const times = done.flatMap((r) => r.times)
    const rate = rule.limit / rule.windowMs
    // One shared bucket, full at each burst, admits its capacity plus the refill of the burst.
    const perBurst = rule.burst + rate * burstMs
    const excess = Array.from(
      { length: bursts },
      (_, k) => times.filter((t) => t < (k + 1) * everyMs).length - (k + 1) * perBurst,
    )
    console.info(
      'synced fleet, bursty',
      JSON.stringify({
        excess,
        offered: done.reduce((n, r) => n + r.offered, 0),
        perHost: done.map((r) => r.admitted),
      }),
    )
    expect(done.every((r) => r.failedSyncs === 0)).toBe(true)
    expect(done.reduce((n, r) => n + r.offered, 0)).toBeGreaterThan(perBurst * bursts)
    // Without a fleet bucket each host meets every burst with a full bucket of its own, and
    // the excess grows by (hosts - 1) × burst = 60 per burst. Allow a quarter of a bucket of
    // growth over three bursts, and at most one bucket's worth overall.
    expect(excess[bursts - 1]! - excess[0]!).toBeLessThanOrEqual(rule.burst / 4)
    expect(excess[bursts - 1]!).toBeLessThanOrEqual(rule.burst)
    // And the bursts are served: most of one bucket per burst.
    expect(times.length).toBeGreaterThan(0.6 * perBurst * bursts)
  }, 30_000)
})
