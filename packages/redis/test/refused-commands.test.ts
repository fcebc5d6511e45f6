import { Redis } from 'ioredis'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createLimiter, type Logger } from '@floodgate/core'
import type { RequestFacts } from '@floodgate/core/http'
import { createRedisStore, createSyncedStore } from '@floodgate/redis'
import { RedisServer, redisBinariesAvailable } from './helpers/redis-server.js'
import { ScriptedRespServer } from './helpers/scripted-resp-server.js'

const binaries = redisBinariesAvailable()
if (!binaries && process.env.CI === 'true') throw new Error('redis-server is required under CI')

const facts = (ip: string): RequestFacts => ({ method: 'GET', path: '/api', ip, headers: {} })
const DEADLINE_MS = 2000

/** A logger that keeps every warning's message and error text. */
function recordingLogger(): Logger & { lines: string[] } {
  const lines: string[] = []
  const keep = (fields: unknown, msg?: string): void => {
    const err = (fields as { err?: unknown } | undefined)?.err
    lines.push(`${msg ?? ''} ${err instanceof Error ? err.message : ''}`)
  }
  return { lines, warn: keep, error: keep, info: () => {}, debug: () => {} }
}

/**
 * Checks through a RedisStore, then syncs of a SyncedStore, against `url`: how many checks
 * failed open, and how many syncs failed.
 */
async function exercise(
  url: string,
  prefix: string,
): Promise<{ failedOpen: number; failedSyncs: number; log: string[] }> {
  const logger = recordingLogger()
  const store = createRedisStore({ url, prefix, callTimeoutMs: DEADLINE_MS, logger })
  const limiter = createLimiter({
    store,
    rules: [{ id: 'r', limit: 100, window: '1m' }],
    decisionTimeoutMs: DEADLINE_MS,
    logger,
  })
  await store.ready
  let failedOpen = 0
  for (let i = 0; i < 4; i++) if ((await limiter.check(facts('10.0.0.1'))).failedOpen) failedOpen++
  await limiter.close()
  const synced = createSyncedStore({
    url,
    prefix,
    syncMs: 600_000,
    syncTimeoutMs: DEADLINE_MS,
    logger,
  })
  const local = createLimiter({
    store: synced,
    rules: [{ id: 's', algorithm: 'token-bucket', limit: 100, window: '1m' }],
    logger,
  })
  await synced.ready
  for (let i = 0; i < 3; i++) {
    await local.check(facts('10.0.0.2'))
    await synced.syncNow() // reads the key's fleet level
    await synced.syncNow() // sends its units
  }
  const failedSyncs = synced.failedSyncs
  await local.close()
  return { failedOpen, failedSyncs, log: logger.lines }
}

describe.skipIf(!binaries)('a Redis that refuses one of the script commands', () => {
  let renamed: RedisServer
  let acl: RedisServer
  let admin: Redis

  beforeAll(async () => {
    renamed = await RedisServer.start([], 'rename-command EVALSHA ""\n')
    acl = await RedisServer.start()
    admin = new Redis(acl.port, '127.0.0.1')
    await admin.call('ACL', 'SETUSER', 'nosha', 'on', '>pw', '~*', '+@all', '-evalsha')
    // The least docs/distributed.md says a Floodgate user needs, under the prefix 'fgacl'.
    await admin.call(
      'ACL',
      'SETUSER',
      'floodgate',
      'on',
      '>pw',
      '~fgacl:*',
      ...['-@all', '+eval', '+evalsha', '+smembers', '+info', '+quit'],
      ...['+get', '+mget', '+psetex', '+del', '+time'],
      ...['+hmget', '+hincrbyfloat', '+hset', '+hgetall', '+pexpire', '+sadd', '+pttl'],
    )
  })
  afterAll(async () => {
    admin.disconnect()
    await renamed.stop()
    await acl.stop()
  })

  it('an ACL user with only the commands and key pattern the docs list runs both stores and the limit records', async () => {
    const url = `redis://floodgate:pw@127.0.0.1:${acl.port}`
    const r = await exercise(url, 'fgacl')
    expect(r).toMatchObject({ failedOpen: 0, failedSyncs: 0 })
    const store = createRedisStore({ url, prefix: 'fgacl', callTimeoutMs: DEADLINE_MS })
    try {
      await store.ready
      await store.recordLimits('r', { limit: 5, windowMs: 1000, burst: 5 })
      expect(await store.recordedLimits('r')).toEqual([{ limit: 5, windowMs: 1000, burst: 5 }])
    } finally {
      await store.close()
    }
    // Outside the key pattern: NOPERM, named in the log.
    const other = await exercise(url, 'fgother')
    expect(other.failedOpen).toBe(4)
    expect(other.failedSyncs).toBeGreaterThan(0)
    expect(other.log.join('\n')).toMatch(/NOPERM/)
  })

  it('with EVALSHA disabled by rename-command, both stores run their scripts with EVAL', async () => {
    const r = await exercise(renamed.url, 'fgrenamed')
    expect(r).toMatchObject({ failedOpen: 0, failedSyncs: 0 })
  })

  it('with EVALSHA refused to the ACL user (NOPERM), both stores run their scripts with EVAL', async () => {
    const r = await exercise(`redis://nosha:pw@127.0.0.1:${acl.port}`, 'fgnosha')
    expect(r).toMatchObject({ failedOpen: 0, failedSyncs: 0 })
  })
})

describe('a server that answers every script call with NOSCRIPT', () => {
  it('costs two calls per check (EVALSHA, then EVAL once), fails open and names NOSCRIPT', async () => {
    const server = await ScriptedRespServer.start(() =>
      Buffer.from('-NOSCRIPT No matching script. Please use EVAL.\r\n'),
    )
    const logger = recordingLogger()
    const store = createRedisStore({ url: server.url, callTimeoutMs: DEADLINE_MS })
    const limiter = createLimiter({
      store,
      rules: [{ id: 'r', limit: 100, window: '1m' }],
      decisionTimeoutMs: DEADLINE_MS,
      logger,
    })
    try {
      await store.ready
      // The first call on a connection is EVAL already; later ones start with EVALSHA.
      await limiter.check(facts('10.0.0.3'))
      const before = server.scriptCalls
      for (let i = 0; i < 5; i++) {
        expect(await limiter.check(facts('10.0.0.3'))).toMatchObject({ failedOpen: true })
      }
      expect(server.scriptCalls - before).toBe(10)
      // Named, once: the limiter logs fail-opens at most once per failOpenLogIntervalMs.
      expect(logger.lines.filter((l) => l.includes('NOSCRIPT'))).toHaveLength(1)
    } finally {
      await limiter.close()
      await server.stop()
    }
  })
})
