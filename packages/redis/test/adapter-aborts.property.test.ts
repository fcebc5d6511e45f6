import { Redis } from 'ioredis'
import { afterAll, beforeAll, describe } from 'vitest'
import { describeAbortProperty } from '@floodgate/core/testing'
import { RedisStore } from '@floodgate/redis'
import { startExpress } from '../../express/test/harness.js'
import { startFastify } from '../../fastify/test/harness.js'
import { REDIS_URL, deletePrefix, redisAvailable, uniquePrefix } from './helpers/redis.js'

const available = await redisAvailable()
const prefix = uniquePrefix('aborts')

// Clients leaving at random moments, with RedisStore deciding: its slots are leases in Redis
// and its queue reservations are Redis state, and its answers arrive in any order.
describe.skipIf(!available)('clients leaving at random moments, on RedisStore', () => {
  let client: Redis
  let n = 0
  beforeAll(async () => {
    client = new Redis(REDIS_URL, {
      enableOfflineQueue: false,
      maxRetriesPerRequest: 0,
      autoResendUnfulfilledCommands: false,
    })
    await new Promise((resolve) => client.once('ready', resolve))
  })
  afterAll(async () => {
    await deletePrefix(client, prefix)
    client.disconnect()
  })

  // The property drives an injected clock, so the store takes the caller's time. Each run
  // gets its own prefix: the client key is always the loopback address.
  const makeStore = () =>
    new RedisStore({
      client,
      prefix: `${prefix}:${++n}`,
      timeSource: 'caller',
      callTimeoutMs: 2000,
    })
  describeAbortProperty(
    { name: 'fastify + RedisStore', start: startFastify },
    { makeStore, runs: Number(process.env.ABORT_RUNS ?? 20) },
  )
  describeAbortProperty(
    { name: 'express + RedisStore', start: startExpress },
    { makeStore, runs: Number(process.env.ABORT_RUNS ?? 20) },
  )
})
