// One benchmark server in its own process: node server.mjs <framework> <variant> <mode>
//   framework: express | fastify | koa
//   variant:   bare | floodgate | peer (express-rate-limit, @fastify/rate-limit, koa-ratelimit)
//              | noop (an empty middleware or onRequest hook: what any limiter pays first)
//              | headers (that hook setting two constant RateLimit headers: the floor of any
//                limiter that sends them)
//              | floodgate-tb | synced | redis (Floodgate with a token-bucket rule on a
//                MemoryStore, a SyncedStore or a RedisStore; the last two use the Redis at
//                REDIS_URL, under a key prefix of their own)
//   mode:      pass (a limit nothing reaches) | reject (one client far over its limit)
// Env: BENCH_CALL_TIMEOUT_MS, the RedisStore's callTimeoutMs and its limiter's decisionTimeoutMs
// (50, their default; under valgrind a call can take longer, and a missed deadline fails open
// down another path);
// BENCH_SYNC_MS, the SyncedStore's syncMs (100, its default; a long one leaves its rounds
// out of a count, to weigh its per-request part alone).
// Reports its port, then answers 'cpu' messages with process.cpuUsage(), over IPC.
import { randomBytes } from 'node:crypto'
import { createServer } from 'node:http'
import { deleteKeys } from '../redis-keys.mjs'

const [framework, variant, mode] = process.argv.slice(2)
const limit = mode === 'reject' ? 1 : 1_000_000_000
const windowMs = 3_600_000
const rules = [{ id: 'per-ip', limit, window: windowMs, algorithm: 'fixed-window' }]
// The rule of the store variants: the one algorithm every Floodgate store can share.
const tokenBucket = [{ id: 'per-ip', limit, window: windowMs, algorithm: 'token-bucket' }]
const body = { hello: 'world' }
// What Floodgate sends on the allow path, as constants (the `headers` variant).
const POLICY = `"per-ip";q=${limit};w=${windowMs / 1000}`
const LIMIT = `"per-ip";r=${limit - 1};t=${windowMs / 1000}`
const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379'
// Unique per server: runs, and other users of the same Redis, never share a counter.
const PREFIX = `${process.env.BENCH_PREFIX ?? 'fgbench'}:http:${randomBytes(6).toString('hex')}`
const STORE_VARIANTS = new Set(['floodgate-tb', 'synced', 'redis'])
/** Closes the store variants' Redis store and deletes its keys; set once one is open. */
let closeStore = async () => {}

/** The limiter of a store variant: the token-bucket rule on the variant's store. */
async function storeLimiter() {
  const { createLimiter } = await import('@floodgate/core')
  if (variant === 'floodgate-tb') return createLimiter({ rules: tokenBucket })
  const { createRedisStore, createSyncedStore } = await import('@floodgate/redis')
  const options = { url: REDIS_URL, prefix: PREFIX }
  // The limiter's deadline too: a store that settles within it needs no timer per request.
  const callTimeoutMs = Number(process.env.BENCH_CALL_TIMEOUT_MS ?? 50)
  const store =
    variant === 'synced'
      ? createSyncedStore({ ...options, syncMs: Number(process.env.BENCH_SYNC_MS ?? 100) })
      : createRedisStore({ ...options, callTimeoutMs })
  // A store without Redis decides locally or fails open: the row would not measure it.
  await Promise.race([store.ready, new Promise((resolve) => setTimeout(resolve, 5000))])
  if (store.client.status !== 'ready') {
    console.error(`bench/http/server.mjs ${variant}: the Redis at ${REDIS_URL} did not answer`)
    process.exit(1)
  }
  closeStore = async () => {
    // Closing a SyncedStore sends its last units: delete the keys after it, on a client of ours.
    await store.close()
    const { Redis } = await import('ioredis')
    const redis = new Redis(REDIS_URL, { maxRetriesPerRequest: 1 })
    await deleteKeys(redis, `${PREFIX}:*`)
    redis.disconnect()
  }
  return createLimiter({ rules: tokenBucket, store, decisionTimeoutMs: callTimeoutMs })
}

async function express() {
  const { default: express } = await import('express')
  const app = express()
  app.disable('x-powered-by')
  app.disable('etag')
  if (variant === 'floodgate') {
    const { rateLimit } = await import('@floodgate/express')
    app.use(rateLimit(rules))
  } else if (STORE_VARIANTS.has(variant)) {
    const { rateLimit } = await import('@floodgate/express')
    app.use(rateLimit(await storeLimiter()))
  } else if (variant === 'peer') {
    const { rateLimit } = await import('express-rate-limit')
    app.use(rateLimit({ windowMs, limit, standardHeaders: 'draft-8', legacyHeaders: false }))
  } else if (variant === 'noop') {
    app.use((_req, _res, next) => next())
  } else if (variant === 'headers') {
    app.use((_req, res, next) => {
      res.setHeader('RateLimit-Policy', POLICY)
      res.setHeader('RateLimit', LIMIT)
      next()
    })
  }
  app.get('/', (_req, res) => {
    res.json(body)
  })
  return createServer(app)
}

async function fastify() {
  const { default: Fastify } = await import('fastify')
  const app = Fastify({ logger: false })
  if (variant === 'floodgate') {
    const { rateLimit } = await import('@floodgate/fastify')
    await app.register(rateLimit, { rules, headers: process.env.FG_HEADERS !== '0' })
  } else if (STORE_VARIANTS.has(variant)) {
    const { rateLimit } = await import('@floodgate/fastify')
    const limiter = await storeLimiter()
    await app.register(rateLimit, { rules: limiter, headers: process.env.FG_HEADERS !== '0' })
  } else if (variant === 'peer') {
    const { default: rateLimit } = await import('@fastify/rate-limit')
    await app.register(rateLimit, { max: limit, timeWindow: windowMs })
  } else if (variant === 'noop') {
    app.addHook('onRequest', (_request, _reply, done) => done())
  } else if (variant === 'headers') {
    app.addHook('onRequest', (_request, reply, done) => {
      reply.header('ratelimit-policy', POLICY)
      reply.header('ratelimit', LIMIT)
      done()
    })
  }
  app.get('/', async () => body)
  await app.ready()
  return app.server
}

async function koa() {
  const { default: Koa } = await import('koa')
  const app = new Koa()
  app.silent = true
  if (variant === 'floodgate') {
    const { rateLimit } = await import('@floodgate/koa')
    app.use(rateLimit(rules))
  } else if (STORE_VARIANTS.has(variant)) {
    const { rateLimit } = await import('@floodgate/koa')
    app.use(rateLimit(await storeLimiter()))
  } else if (variant === 'peer') {
    const { default: ratelimit } = await import('koa-ratelimit')
    app.use(
      ratelimit({
        driver: 'memory',
        db: new Map(),
        duration: windowMs,
        max: limit,
        id: (ctx) => ctx.ip,
      }),
    )
  } else if (variant === 'noop') {
    app.use((_ctx, next) => next())
  } else if (variant === 'headers') {
    app.use((ctx, next) => {
      ctx.res.setHeader('RateLimit-Policy', POLICY)
      ctx.res.setHeader('RateLimit', LIMIT)
      return next()
    })
  }
  app.use((ctx) => {
    ctx.body = body
  })
  return createServer(app.callback())
}

const server = await { express, fastify, koa }[framework]()
server.keepAliveTimeout = 60_000
server.listen(0, '127.0.0.1', () => {
  process.send({ port: server.address().port })
})
process.on('message', (msg) => {
  if (msg === 'cpu') {
    const u = process.cpuUsage()
    process.send({ cpuUs: u.user + u.system })
  } else if (msg === 'exit') {
    // Bounded: a Redis gone quiet must not keep the process alive.
    const late = new Promise((resolve) => setTimeout(resolve, 2000).unref())
    void Promise.race([closeStore(), late])
      .catch(() => {})
      .finally(() => process.exit(0))
  }
})
