import { randomUUID } from 'node:crypto'
import { Redis } from 'ioredis'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createLimiter, type Limiter, type Rule } from '@floodgate/core'
import { parseRule } from '@floodgate/core/rules'
import { stateIdOf } from '@floodgate/core/algorithms'
import { type RequestFacts } from '@floodgate/core/http'
import { redisKey, type RedisStore, type SyncedStore } from '@floodgate/redis'
import { hashTag } from '../src/redis-key.js'
import { coveredSnippets, docsHarness, readDoc, where } from '@floodgate/docs-snippets'
import { REDIS_URL, redisAvailable } from './helpers/redis.js'

// Every ```ts block of docs/distributed.md runs here: the store snippet against the Redis at
// REDIS_URL (as the snippet reads it), the Cluster one as written. Fragments run after the
// setup they take for granted (`before`) and export what they built (`after`).
const page = 'distributed.md'
const [redisStore, cluster, synced] = coveredSnippets(page, 3)
const { runner, itTypeChecks } = docsHarness(new URL('..', import.meta.url))

const available = await redisAvailable()

// The page's example: a token bucket of 4 tokens refilled at 4 per minute.
const rules = `const rules = [{ id: 'per-key', key: 'header:x-api-key', limit: 4, window: '1m' }]`

describe.skipIf(!available)(`docs/${page} on Redis`, () => {
  let admin: Redis
  const written: string[] = []
  beforeAll(() => {
    admin = new Redis(REDIS_URL)
  })
  afterAll(async () => {
    if (written.length > 0) await admin.del(...written)
    admin.disconnect()
  })

  it(`${where(redisStore!)}: three hosts on one Redis admit exactly 4 of 12, locally up to 12`, async () => {
    // The snippet reads REDIS_URL from the environment, as an app would.
    const before = process.env.REDIS_URL
    process.env.REDIS_URL = REDIS_URL
    const hosts: { store: RedisStore; limiter: Limiter }[] = []
    for (let i = 0; i < 3; i++) {
      const host = await runner.run(redisStore!, {
        before: rules,
        after: 'export { store, limiter }',
        // The page's 50 ms defaults are a production deadline; on a loaded 2-core CI machine a
        // round trip can take longer, and a fail-open here would say nothing about the page.
        set: {
          'createRedisStore({ url: process.env.REDIS_URL': 'callTimeoutMs: 5_000',
          'createLimiter({ rules, store': 'decisionTimeoutMs: 5_000',
        },
      })
      hosts.push(host as unknown as (typeof hosts)[number])
    }
    const local = [1, 2, 3].map(() =>
      createLimiter({
        rules: [{ id: 'per-key', key: 'header:x-api-key', limit: 4, window: '1m' }],
      }),
    )
    try {
      const facts: RequestFacts = {
        method: 'GET',
        path: '/',
        ip: '192.0.2.1',
        headers: { 'x-api-key': `docs-${randomUUID()}` },
      }
      let shared = 0
      let perHost = 0
      // 12 requests, round-robin over the three hosts.
      for (let i = 0; i < 12; i++) {
        const decision = await hosts[i % 3]!.limiter.check(facts)
        expect(decision.failedOpen).toBe(false)
        const outcome = decision.outcomes[0]!
        written.push(redisKey('fg', outcome.key, stateIdOf(outcome.rule)))
        if (decision.allowed) shared++
        if ((await local[i % 3]!.check(facts)).allowed) perHost++
      }
      expect(shared).toBe(4)
      expect(perHost).toBe(12)
      expect(await admin.pttl(written[0]!)).toBeGreaterThan(0)
    } finally {
      await Promise.all(hosts.map((h) => h.limiter.close()))
      if (before === undefined) delete process.env.REDIS_URL
      else process.env.REDIS_URL = before
    }
  })
})

describe.skipIf(!available)(`docs/${page}: synced mode`, () => {
  /** Three hosts running the snippet, as the page's example. */
  async function fleet(): Promise<{ store: SyncedStore; limiter: Limiter }[]> {
    const before = process.env.REDIS_URL
    process.env.REDIS_URL = REDIS_URL
    try {
      const hosts: { store: SyncedStore; limiter: Limiter }[] = []
      for (let i = 0; i < 3; i++) {
        const host = await runner.run(synced!, {
          before: rules,
          after: 'export { store, limiter }',
        })
        hosts.push(host as unknown as (typeof hosts)[number])
      }
      await Promise.all(hosts.map((h) => h.store.ready))
      return hosts
    } finally {
      if (before === undefined) delete process.env.REDIS_URL
      else process.env.REDIS_URL = before
    }
  }
  const counters: string[] = []
  afterAll(async () => {
    const admin = new Redis(REDIS_URL)
    if (counters.length > 0) await admin.del(...counters)
    admin.disconnect()
  })
  const counterOf = (decision: { outcomes: readonly { key: string; rule: Rule }[] }): void => {
    const o = decision.outcomes[0]!
    counters.push(`${redisKey('fg', o.key, stateIdOf(o.rule))}:synced`)
  }
  const facts = (): RequestFacts => ({
    method: 'GET',
    path: '/',
    ip: '192.0.2.1',
    headers: { 'x-api-key': `docs-synced-${randomUUID()}` },
  })

  it(`${where(synced!)}: 4 of 12 when a sync runs between requests`, async () => {
    const hosts = await fleet()
    // Every host reads, then pushes, so the next request meets an up-to-date bucket.
    const syncAll = async (): Promise<void> => {
      for (let pass = 0; pass < 2; pass++) for (const h of hosts) await h.store.syncNow()
    }
    try {
      const f = facts()
      let admitted = 0
      for (let i = 0; i < 12; i++) {
        const decision = await hosts[i % 3]!.limiter.check(f)
        expect(decision.failedOpen).toBe(false)
        if (decision.allowed) admitted++
        if (i === 0) counterOf(decision)
        await syncAll()
      }
      expect(admitted).toBe(4)
    } finally {
      await Promise.all(hosts.map((h) => h.limiter.close()))
    }
  })

  it(`${where(synced!)}: up to 12 between two syncs, then 8 units of debt on every host`, async () => {
    const hosts = await fleet()
    try {
      const f = facts()
      let admitted = 0
      // Synchronous decisions, back to back: no sync can run in between.
      for (let i = 0; i < 12; i++) {
        const decision = hosts[i % 3]!.limiter.check(f)
        if (decision instanceof Promise) throw new Error('a SyncedStore decides synchronously')
        if (decision.allowed) admitted++
        if (i === 0) counterOf(decision)
      }
      expect(admitted).toBe(12)
      for (let pass = 0; pass < 2; pass++) for (const h of hosts) await h.store.syncNow()
      for (const h of hosts) {
        const decision = await h.limiter.check(f)
        expect(decision.allowed).toBe(false)
        // 12 held in a bucket of 4: 8 units of debt to pay back at one per 15 s, then each host
        // gets a third of the refill: its next unit comes 45 s later (3 units, one per host).
        expect(decision.retryAfterMs).toBeGreaterThan(164_000)
        expect(decision.retryAfterMs).toBeLessThanOrEqual(165_000)
      }
    } finally {
      await Promise.all(hosts.map((h) => h.limiter.close()))
    }
  })
})

describe(`docs/${page}`, () => {
  it(`${where(cluster!)}: the Cluster options are accepted; unreachable nodes fail open`, async () => {
    const { store } = await runner.run(cluster!, {
      before: "import { createRedisStore } from '@floodgate/redis'",
      after: 'export { store }',
    })
    const limiter = createLimiter({
      rules: [{ id: 'per-ip', limit: 1, window: '1m' }],
      store: store as RedisStore,
    })
    try {
      const facts = { method: 'GET', path: '/', ip: '192.0.2.1', headers: {} }
      expect((await limiter.check(facts)).failedOpen).toBe(true)
    } finally {
      await limiter.close()
    }
  })

  it('the key shown is the key of client 203.0.113.7 under the rule shown', () => {
    const rule = parseRule({ id: 'per-ip', limit: 100, window: '1m' })
    const key = redisKey('fg', '203.0.113.7', stateIdOf(rule))
    expect(key).toBe(`fg:{${hashTag('203.0.113.7')}}:per-ip|token-bucket|100|60000|100`)
    expect(readDoc(page)).toContain(`\n${key}\n`)
  })
})

itTypeChecks()
