import { Redis } from 'ioredis'
import { afterAll, describe } from 'vitest'
import { describeStoreConformance } from '@floodgate/core/testing'
import { createRedisStore } from '@floodgate/redis'
import { REDIS_URL, deletePrefix, redisAvailable, uniquePrefix } from './helpers/redis.js'

const available = await redisAvailable()
const prefix = uniquePrefix('conformance')

describe.skipIf(!available)('RedisStore', () => {
  afterAll(async () => {
    const admin = new Redis(REDIS_URL)
    await deletePrefix(admin, prefix)
    admin.disconnect()
  })

  // The suite drives time itself, so the store uses the caller's nowMs here; production uses
  // Redis TIME (the default), which the other Redis tests cover.
  describeStoreConformance('RedisStore (single Redis)', async () => {
    const store = createRedisStore({
      url: REDIS_URL,
      prefix,
      timeSource: 'caller',
      callTimeoutMs: 2000,
    })
    await store.ready
    return store
  })
})
