// Run inside a throwaway project that installed the packed @floodgate/core and
// @floodgate/redis with one ioredis major: a limiter on the Redis store admits one request and
// refuses the next (a refusal only Redis can make: the store has no fallback, and a failed
// call lets requests through). Prints the ioredis version and the two decisions as JSON.
import { createRequire } from 'node:module'
import { createLimiter } from '@floodgate/core'
import { createRedisStore } from '@floodgate/redis'

const { version } = createRequire(import.meta.url)('ioredis/package.json')
const prefix = `fgtest:ioredis${version}:${process.pid}:${Date.now()}`
const store = createRedisStore({ url: process.env.REDIS_URL, prefix, callTimeoutMs: 2000 })
await store.ready
const limiter = createLimiter({ rules: [{ id: 'one', limit: 1, window: '1m' }], store })
const facts = { method: 'GET', path: '/', ip: '192.0.2.1', headers: {} }
try {
  const first = await limiter.check(facts)
  const second = await limiter.check(facts)
  console.log(JSON.stringify({ version, decisions: [first.status, second.status] }))
} finally {
  await limiter.close()
}
