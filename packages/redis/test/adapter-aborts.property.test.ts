import { describe } from 'vitest'
import { describeAbortProperty } from '@floodgate/core/testing'
import { startExpress } from '../../express/test/harness.js'
import { startFastify } from '../../fastify/test/harness.js'
import { startKoa } from '../../koa/test/harness.js'
import { callerTimeStores, redisAvailable, uniquePrefix } from './helpers/redis.js'

const available = await redisAvailable()
const prefix = uniquePrefix('aborts')

// Clients leaving at random moments, with RedisStore deciding: its slots are leases in Redis
// and its queue reservations are Redis state, and its answers arrive in any order.
describe.skipIf(!available)('clients leaving at random moments, on RedisStore', () => {
  // The property drives an injected clock, so the store takes the caller's time. Each run
  // gets its own prefix: the client key is always the loopback address.
  const { makeStore } = callerTimeStores(prefix)
  const runs = Number(process.env.ABORT_RUNS ?? 20)
  describeAbortProperty({ name: 'fastify + RedisStore', start: startFastify }, { makeStore, runs })
  describeAbortProperty({ name: 'express + RedisStore', start: startExpress }, { makeStore, runs })
  describeAbortProperty({ name: 'koa + RedisStore', start: startKoa }, { makeStore, runs })
})
