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

  // The whole table, 'queue full rejects' included: the limiter takes a queue place when the
  // store's answer comes and refuses (giving back the reservation) when the queue filled
  // while the call was in flight.
  const scenarios = adapterScenarios

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
