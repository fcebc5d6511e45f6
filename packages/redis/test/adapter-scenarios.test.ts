import type { AddressInfo } from 'node:net'
import Fastify, { type FastifyRequest } from 'fastify'
import { Redis } from 'ioredis'
import { afterAll, beforeAll, describe } from 'vitest'
import type { Limiter } from '@floodgate/core'
import {
  adapterScenarios,
  describeAdapterScenarios,
  type HarnessSetup,
  type RunningApp,
} from '@floodgate/core/testing'
import { rateLimit } from '@floodgate/fastify'
import { RedisStore } from '@floodgate/redis'
import { REDIS_URL, deletePrefix, redisAvailable, uniquePrefix } from './helpers/redis.js'

const available = await redisAvailable()
const prefix = uniquePrefix('scenarios')

/** The scenario app the Fastify way (route config carries cost and exemptions). */
async function startFastify(setup: HarnessSetup): Promise<RunningApp> {
  const app = Fastify({ trustProxy: setup.trustProxy })
  await app.register(rateLimit, {
    rules: setup.limiter as unknown as Limiter<FastifyRequest>,
    ...setup.options,
  })
  app.setErrorHandler((_err, _request, reply) => reply.code(500).send({ error: 'boom' }))
  for (const r of setup.routes) {
    app.route({
      method: r.method,
      url: r.path,
      config: { rateLimit: r.exempt ? false : r.cost !== undefined ? { cost: r.cost } : {} },
      handler: async () => {
        await setup.enter(r)
        if (r.fail) throw new Error('boom')
        return { ok: true }
      },
    })
  }
  await app.listen({ port: 0, host: '127.0.0.1' })
  const { port } = app.server.address() as AddressInfo
  return {
    url: `http://127.0.0.1:${port}`,
    async send(req) {
      const r = await app.inject({ method: req.method, url: req.path, headers: req.headers ?? {} })
      return { status: r.statusCode, headers: r.headers as Record<string, string>, text: r.body }
    },
    close: async () => {
      app.server.closeAllConnections()
      await app.close()
    },
  }
}

describe.skipIf(!available)('the adapters scenario table on RedisStore', () => {
  let client: Redis
  let n = 0
  beforeAll(async () => {
    // One connected client shared by every scenario's store, each under its own prefix.
    client = new Redis(REDIS_URL, { enableOfflineQueue: false, maxRetriesPerRequest: 0 })
    await new Promise((resolve) => client.once('ready', resolve))
  })
  afterAll(async () => {
    await deletePrefix(client, prefix)
    client.disconnect()
  })

  // Left out: the limiter counts a queue place when the store answers, so with an async store
  // two requests in flight at once can both take the last place (reported to core; the
  // reservations themselves are in Redis and still bound the wait).
  const scenarios = adapterScenarios.filter((s) => s.name !== 'queue full rejects')

  // The table drives an injected clock, so the store uses the caller's nowMs here.
  describeAdapterScenarios({ name: 'fastify + RedisStore', start: startFastify }, scenarios, {
    makeStore: () =>
      new RedisStore({ client, prefix: `${prefix}:${++n}`, clock: 'caller', timeoutMs: 1000 }),
  })
})
