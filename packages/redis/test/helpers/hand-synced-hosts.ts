import { Redis } from 'ioredis'
import { afterAll, beforeAll } from 'vitest'
import { createSyncedStore, type SyncedStore } from '@floodgate/redis'
import { REDIS_URL, deletePrefix } from './redis.js'

/**
 * `count` SyncedStores on the Redis at REDIS_URL under `prefix`, on the injected `clock`, whose
 * rounds the test runs by hand (`syncNow`: the timer's `syncMs` is far beyond any case). Made
 * before the tests of the describe block that calls this; closed, and their keys deleted, after.
 */
export function handSyncedHosts(prefix: string, count: number, clock: () => number): SyncedStore[] {
  const hosts: SyncedStore[] = []
  let admin: Redis | undefined
  beforeAll(async () => {
    admin = new Redis(REDIS_URL)
    for (let i = 0; i < count; i++) {
      hosts.push(createSyncedStore({ url: REDIS_URL, prefix, syncMs: 600_000, clock }))
    }
    await Promise.all(hosts.map((h) => h.ready))
  })
  afterAll(async () => {
    await Promise.all(hosts.map((h) => h.close()))
    if (admin) {
      await deletePrefix(admin, prefix)
      admin.disconnect()
    }
  })
  return hosts
}
