import { Redis } from 'ioredis'
import { afterAll, beforeAll } from 'vitest'
import { createRedisStore, type RedisStore, type RedisStoreOptions } from '@floodgate/redis'
import { REDIS_URL, deletePrefix } from './redis.js'

/** What {@link callerClockStore} hands a describe block, set once its `beforeAll` has run. */
export interface CallerClockStore {
  /** A plain connection, to write and read keys behind the store's back. */
  readonly admin: Redis
  /** A RedisStore under the block's prefix that takes the caller's clock. */
  readonly store: RedisStore
}

/**
 * For a describe block: an admin connection and a RedisStore on the caller's clock under
 * `prefix`, made before its tests and closed, with every key under the prefix deleted, after
 * them. Read the fields inside tests (they are set by `beforeAll`). `options` adds to (or
 * overrides) the store's own.
 */
export function callerClockStore(
  prefix: string,
  options: RedisStoreOptions = {},
): CallerClockStore {
  const made = {} as { admin: Redis; store: RedisStore }
  beforeAll(async () => {
    made.admin = new Redis(REDIS_URL)
    made.store = createRedisStore({
      url: REDIS_URL,
      prefix,
      timeSource: 'caller',
      callTimeoutMs: 2000,
      ...options,
    })
    await made.store.ready
  })
  afterAll(async () => {
    await made.store.close()
    await deletePrefix(made.admin, prefix)
    made.admin.disconnect()
  })
  return made
}
