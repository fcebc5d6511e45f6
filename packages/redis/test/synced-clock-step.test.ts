import { Redis } from 'ioredis'
import { afterAll, describe, expect, it } from 'vitest'
import { STATE_TIME_HORIZON_MS, type ConsumeEntry } from '@floodgate/core/algorithms'
import { testRule } from '@floodgate/core/testing'
import { hashTag } from '../src/redis-key.js'
import { handSyncedHosts } from './helpers/hand-synced-hosts.js'
import { REDIS_URL, redisAvailable, uniquePrefix } from './helpers/redis.js'

// SyncedStore's fleet bucket is a schedule in Redis TIME. When Redis's clock is stepped back
// (an NTP step, a failover to a host whose clock is behind), the schedule the clock left lies a
// whole step ahead: read as it is, every host learns a debt of the step and refuses its clients
// until the clock catches up. Redis's clock cannot be moved from a test, so the counter is
// written as a sync an hour ahead leaves it, then the hosts sync against the real clock.

const available = await redisAvailable()
const prefix = uniquePrefix('synced-clock-step')
const HOUR_MS = 3_600_000
// 1 per second, burst 10: the fleet bucket empties with 10 units and refills one a second.
const rule = testRule('token-bucket', 10, 10_000)
const entry = (key: string): ConsumeEntry[] => [{ rule, key, cost: 1, maxWaitMs: 0, shadow: false }]
const counter = (key: string): string => `${prefix}:{${hashTag(key)}}:${rule.stateId}:synced`

describe.skipIf(!available)('SyncedStore after Redis clock steps back', () => {
  const now = 1_000_000
  const hosts = handSyncedHosts(prefix, 2, () => now)
  const admin = new Redis(REDIS_URL)
  afterAll(() => admin.disconnect())

  const redisNow = async (): Promise<number> => {
    const [s, us] = await admin.time()
    return Number(s) * 1000 + Math.floor(Number(us) / 1000)
  }

  it('an hour back: the hosts learn the empty bucket the last sync left, not an hour of debt, and a host that synced only in that future is not counted', async () => {
    const key = 'stepped'
    const ahead = (await redisNow()) + HOUR_MS
    // The last sync, an hour ahead: the bucket emptied (10 units), by a host gone since.
    await admin.hset(counter(key), {
      t: '10',
      f: String(ahead + 10 * 1000),
      x: '0',
      w: String(ahead),
      's:gone-host': '1',
      'p:gone-host': String(ahead),
    })
    for (const h of hosts) expect(h.consume(entry(key), now)[0]!.allowed).toBe(true)
    await new Promise((resolve) => setImmediate(resolve))
    for (const h of hosts) await h.syncNow()
    for (const h of hosts) await h.syncNow()
    // The schedule moved back with the clock: 12 units from about now, not from an hour on.
    const f = Number(await admin.hget(counter(key), 'f'))
    const at = await redisNow()
    expect(f - at).toBeGreaterThan(10 * 1000 - 5000)
    expect(f - at).toBeLessThanOrEqual(12 * 1000)
    expect(Number(await admin.hget(counter(key), 'w'))).toBeLessThanOrEqual(at)
    // Both hosts hold the fleet's debt of 2 units (paid back at the full rate, 2 s) and then
    // wait for a unit at their share of the refill: 1 s over a half, 2 s, if the gone host is
    // not counted, 3 s if it is. Refused for seconds, not for an hour.
    for (const h of hosts) {
      const [r] = h.consume(entry(key), now)
      expect(r!.allowed).toBe(false)
      expect(r!.retryAfterMs).toBeGreaterThan(3000)
      expect(r!.retryAfterMs).toBeLessThanOrEqual(4000)
    }
  })

  it('a step back within the horizon leaves the schedule where it was', async () => {
    const key = 'within'
    const ahead = (await redisNow()) + STATE_TIME_HORIZON_MS - 200
    const tat = ahead + 10 * 1000
    await admin.hset(counter(key), { t: '10', f: String(tat), x: '0', w: String(ahead) })
    expect(hosts[0]!.consume(entry(key), now)[0]!.allowed).toBe(true)
    await new Promise((resolve) => setImmediate(resolve))
    await hosts[0]!.syncNow()
    await hosts[0]!.syncNow()
    // One more unit on the schedule, which was not moved back.
    expect(Number(await admin.hget(counter(key), 'f'))).toBe(tat + 1000)
  })
})
