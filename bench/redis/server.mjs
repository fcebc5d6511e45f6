// One HTTP benchmark server: node server.mjs <bare | floodgate-redis | peer-redis>
// A limit nothing reaches, keyed by client IP, on the Redis at REDIS_URL.
import { Redis } from 'ioredis'
import Fastify from 'fastify'

const [variant] = process.argv.slice(2)
const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379'
const PREFIX = process.env.BENCH_PREFIX ?? 'fgbench'
const app = Fastify()

if (variant === 'floodgate-redis') {
  const { rateLimit } = await import('@floodgate/fastify')
  const { createRedisStore } = await import('@floodgate/redis')
  const store = createRedisStore({ url: REDIS_URL, prefix: `${PREFIX}:http` })
  await store.ready
  await app.register(rateLimit, {
    rules: [{ id: 'per-ip', algorithm: 'token-bucket', limit: 1_000_000_000, window: '1h' }],
    store,
  })
} else if (variant === 'peer-redis') {
  const { default: rateLimit } = await import('@fastify/rate-limit')
  const redis = new Redis(REDIS_URL, { connectTimeout: 500, maxRetriesPerRequest: 1 })
  await app.register(rateLimit, {
    max: 1_000_000_000,
    timeWindow: 3_600_000,
    redis,
    nameSpace: `${PREFIX}:frl-http-`,
  })
}

app.get('/', async () => ({ hello: 'world' }))
await app.listen({ port: 0, host: '127.0.0.1' })
process.send({ port: app.server.address().port })
// CPU time so far, on request: the parent divides the difference by the responses.
process.on('message', (m) => {
  if (m === 'cpu') {
    const u = process.cpuUsage()
    process.send({ cpuUs: u.user + u.system })
  }
})
// A clean exit on SIGINT, so `node --cpu-prof` can write its profile.
process.on('SIGINT', () => process.exit(0))
