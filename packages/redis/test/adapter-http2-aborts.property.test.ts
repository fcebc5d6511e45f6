import { describe } from 'vitest'
import { describeHttp2AbortProperty } from '@floodgate/core/testing'
import { serveFastifyHttp2 } from '../../fastify/test/http2-serve.js'
import { serveKoaHttp2 } from '../../koa/test/http2-serve.js'
import { callerTimeStores, redisAvailable, uniquePrefix } from './helpers/redis.js'

const available = await redisAvailable()
const prefix = uniquePrefix('h2-aborts')

// The HTTP/2 property (reset streams, destroyed sessions, multiplexed streams) with RedisStore
// deciding, its answers held and delivered in any order. Express has no HTTP/2 server.
describe.skipIf(!available)('HTTP/2 clients leaving at random moments, on RedisStore', () => {
  const { makeStore } = callerTimeStores(prefix)
  const runs = Number(process.env.ABORT_RUNS ?? 20)
  describeHttp2AbortProperty('fastify + RedisStore', serveFastifyHttp2, { makeStore, runs })
  describeHttp2AbortProperty('koa + RedisStore', serveKoaHttp2, { makeStore, runs })
})
