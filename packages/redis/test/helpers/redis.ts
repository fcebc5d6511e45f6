import { Redis } from 'ioredis'
import { randomBytes } from 'node:crypto'
import { afterAll, beforeAll } from 'vitest'
import { RedisStore } from '@floodgate/redis'

/** The Redis the tests use (loopback by default). */
export const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379'

/**
 * Whether the Redis at REDIS_URL answers. Under CI=true a missing Redis is an error (the
 * suite must not pass by skipping); elsewhere the Redis suites skip.
 */
export async function redisAvailable(): Promise<boolean> {
  const probe = new Redis(REDIS_URL, {
    lazyConnect: true,
    enableOfflineQueue: false,
    maxRetriesPerRequest: 0,
    retryStrategy: () => null,
    connectTimeout: 1000,
  })
  probe.on('error', () => {})
  try {
    await probe.connect()
    await probe.ping()
    return true
  } catch (err) {
    if (process.env.CI === 'true') {
      throw new Error(`Redis is required under CI but ${REDIS_URL} did not answer`, { cause: err })
    }
    return false
  } finally {
    probe.disconnect()
  }
}

/** A key prefix unique to one test file run, so files and reruns never share state. */
export function uniquePrefix(name: string): string {
  return `fgtest:${name}:${randomBytes(4).toString('hex')}`
}

/** Delete every key under a prefix (cleanup; SCAN, never KEYS). */
export async function deletePrefix(client: Redis, prefix: string): Promise<void> {
  let cursor = '0'
  do {
    const [next, keys] = await client.scan(cursor, 'MATCH', `${prefix}:*`, 'COUNT', 1000)
    cursor = next
    if (keys.length > 0) await client.del(...keys)
  } while (cursor !== '0')
}

/** What {@link adminConnection} hands a describe block, set once its `beforeAll` has run. */
export interface AdminConnection {
  /** A plain connection to REDIS_URL, to write and read keys behind a store's back. */
  readonly admin: Redis
}

/**
 * For a describe block: a plain connection to REDIS_URL, opened before its tests and closed,
 * with every key under `prefix` deleted, after them. Read `admin` inside tests.
 */
export function adminConnection(prefix: string): AdminConnection {
  const made = {} as { admin: Redis }
  beforeAll(() => {
    made.admin = new Redis(REDIS_URL)
  })
  afterAll(async () => {
    await deletePrefix(made.admin, prefix)
    made.admin.disconnect()
  })
  return made
}

/** What {@link callerTimeStores} hands a describe block. */
export interface CallerTimeStores {
  /** A RedisStore on the caller's clock under a prefix of its own, on the block's connection. */
  readonly makeStore: () => RedisStore
}

/**
 * For a describe block whose tests drive an injected clock and want a fresh store each (the
 * adapter scenario table, the abort property): one limiter-safe connection opened before the
 * tests, every key under `prefix` deleted and the connection closed after them.
 */
export function callerTimeStores(prefix: string): CallerTimeStores {
  let client: Redis | undefined
  let n = 0
  beforeAll(async () => {
    client = new Redis(REDIS_URL, {
      enableOfflineQueue: false,
      maxRetriesPerRequest: 0,
      autoResendUnfulfilledCommands: false,
    })
    await new Promise((resolve) => client!.once('ready', resolve))
  })
  afterAll(async () => {
    if (client === undefined) return
    await deletePrefix(client, prefix)
    client.disconnect()
  })
  return {
    makeStore: () =>
      new RedisStore({
        client: client!,
        prefix: `${prefix}:${++n}`,
        timeSource: 'caller',
        callTimeoutMs: 1000,
      }),
  }
}
