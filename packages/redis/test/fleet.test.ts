import type { ChildProcess } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { Redis } from 'ioredis'
import { afterAll, describe, expect, it } from 'vitest'
import {
  algorithms,
  type AlgorithmName,
  type CompiledRule,
  type ConsumeEntry,
} from '@floodgate/core/algorithms'
import { createRedisStore } from '@floodgate/redis'
import { forkFleetHost } from './helpers/fleet-host.js'
import { REDIS_URL, deletePrefix, redisAvailable, uniquePrefix } from './helpers/redis.js'

const available = await redisAvailable()
const prefix = uniquePrefix('fleet')
const HOSTS = 4
const worker = fileURLToPath(new URL('./fleet/fleet-worker.ts', import.meta.url))

const tb = {
  algorithm: 'token-bucket' as AlgorithmName,
  limit: 100,
  windowMs: 1000,
  burst: 50,
  key: 'fleet-tb',
  stateId: 'tb',
}
const fw = {
  algorithm: 'fixed-window' as AlgorithmName,
  limit: 40,
  windowMs: 400,
  burst: 40,
  key: 'fleet-fw',
  stateId: 'fw',
}

const entry = (r: typeof tb, cost: number): ConsumeEntry[] => [
  {
    rule: {
      stateId: r.stateId,
      algorithm: algorithms[r.algorithm],
      params: r,
    } as unknown as CompiledRule,
    key: r.key,
    cost,
    maxWaitMs: 0,
    shadow: false,
  },
]

async function redisTimeMs(c: Redis): Promise<number> {
  const [s, us] = await c.time()
  return Number(s) * 1000 + Math.floor(Number(us) / 1000)
}

describe.skipIf(!available)('a fleet of 4 hosts on one Redis', () => {
  const children: ChildProcess[] = []
  afterAll(async () => {
    for (const c of children) if (c.exitCode === null) c.kill('SIGKILL')
    const admin = new Redis(REDIS_URL)
    await deletePrefix(admin, prefix)
    admin.disconnect()
  })

  it('admits exactly what the algorithm allows for the elapsed Redis time, together', async () => {
    const admin = new Redis(REDIS_URL)
    const store = createRedisStore({ url: REDIS_URL, prefix, callTimeoutMs: 5000 })
    await store.ready

    const hosts = Array.from({ length: HOSTS }, () =>
      forkFleetHost<{ admitted: number[]; failed: number }>(worker, {
        url: REDIS_URL,
        prefix,
        rules: [tb, fw],
        inFlight: 4,
      }),
    )
    children.push(...hosts.map((h) => h.child))
    const ready = hosts.map((h) => h.ready)
    const results = hosts.map((h) => h.report)
    await Promise.all(ready)

    // The parent empties the bucket and fills the current window first, so from here on
    // demand always exceeds supply and the count depends only on Redis time. (Not in the last
    // 100 ms of a window, so both calls land in the same one.)
    while ((await redisTimeMs(admin)) % fw.windowMs > fw.windowMs - 100) {
      await new Promise((r) => setTimeout(r, 20))
    }
    const tStartMin = await redisTimeMs(admin)
    const [first] = await store.consume(entry(tb, tb.burst), 0)
    const [firstFw] = await store.consume(entry(fw, fw.limit), 0)
    const tStartMax = await redisTimeMs(admin)
    expect(first!.allowed && firstFw!.allowed).toBe(true)
    const window0 = Math.floor(tStartMax / fw.windowMs)

    // Stop in the middle of a later window (Redis and this host share a clock offset).
    const stopRedis = (window0 + 3) * fw.windowMs + fw.windowMs / 2
    const stopAtMs = Date.now() + (stopRedis - (await redisTimeMs(admin)))
    for (const c of children) c.send({ stopAtMs })
    const reports = await Promise.all(results)
    expect(reports.every((r) => r.failed === 0)).toBe(true)

    const tEndMin = await redisTimeMs(admin)
    const [lastTb] = await store.consume(entry(tb, 1), 0)
    const tEndMax = await redisTimeMs(admin)

    // Fixed window: every window before the probe's was filled exactly; the probe's window
    // holds `limit - remaining`. Probe until one lands clearly inside a window (on a loaded
    // machine the workers may stop late, even in the next window).
    let fwAdmitted = fw.limit + reports.reduce((n, r) => n + r.admitted[1]!, 0)
    for (;;) {
      const before = await redisTimeMs(admin)
      const [probe] = await store.consume(entry(fw, 1), 0)
      const after = await redisTimeMs(admin)
      if (probe!.allowed) fwAdmitted++
      const w = Math.floor(before / fw.windowMs)
      if (w === Math.floor(after / fw.windowMs)) {
        expect(fwAdmitted).toBe(fw.limit * (w - window0) + (fw.limit - probe!.remaining))
        expect(w - window0).toBeGreaterThanOrEqual(3)
        break
      }
    }

    // Token bucket: admitted = capacity + rate × elapsed - what is left, to the unit. Left is
    // `burst - remaining` up to one fractional token; elapsed is known to Redis's millisecond.
    const rate = tb.limit / tb.windowMs
    const tbAdmitted =
      tb.burst + reports.reduce((n, r) => n + r.admitted[0]!, 0) + (lastTb!.allowed ? 1 : 0)
    const used = tb.burst - lastTb!.remaining
    expect(tbAdmitted).toBeLessThanOrEqual(used + rate * (tEndMax - tStartMin))
    expect(tbAdmitted).toBeGreaterThan(used - 1 + rate * (tEndMin - tStartMax))

    await store.close()
    admin.disconnect()
  }, 30_000)
})
