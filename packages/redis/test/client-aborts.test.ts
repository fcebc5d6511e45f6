import { request as httpRequest } from 'node:http'
import fc from 'fast-check'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createLimiter } from '@floodgate/core'
import type { AdapterHarness, ScenarioRoute } from '@floodgate/core/testing'
import { createRedisStore } from '@floodgate/redis'
import { startExpress } from '../../express/test/harness.js'
import { startFastify } from '../../fastify/test/harness.js'
import { startKoa } from '../../koa/test/harness.js'
import { eventually } from './helpers/eventually.js'
import { FaultProxy } from './helpers/fault-proxy.js'
import { RedisServer, redisBinariesAvailable } from './helpers/redis-server.js'

// Clients that go away at any moment (while the store decides, while the handler runs, after
// the response) through the three adapters over real sockets, on a RedisStore whose answers
// may be slow: every concurrency slot comes back to Redis, once.

const binaries = redisBinariesAvailable()
if (!binaries && process.env.CI === 'true') throw new Error('redis-server is required under CI')

const harnesses: AdapterHarness[] = [
  { name: 'express', start: startExpress },
  { name: 'fastify', start: startFastify },
  { name: 'koa', start: startKoa },
]
const ROUTES: ScenarioRoute[] = [
  { method: 'GET', path: '/' },
  { method: 'GET', path: '/slow', slow: true },
]

/** One request: its path, and when (ms after sending) its client leaves; null: it stays. */
interface Client {
  readonly slow: boolean
  readonly leaveAfterMs: number | null
}

/** Send a GET; resolves with the status, or 0 when the client left first. */
function send(url: string, path: string, leaveAfterMs: number | null): Promise<number> {
  return new Promise((resolve) => {
    const req = httpRequest(`${url}${path}`, { agent: false }, (res) => {
      res.resume()
      res.on('end', () => resolve(res.statusCode ?? 0))
      res.on('error', () => resolve(0))
    })
    req.on('error', () => resolve(0))
    req.end()
    if (leaveAfterMs !== null) setTimeout(() => req.destroy(), leaveAfterMs)
  })
}

describe.skipIf(!binaries)('clients leaving at any moment, on RedisStore', () => {
  let server: RedisServer
  let proxy: FaultProxy
  beforeAll(async () => {
    server = await RedisServer.start()
    proxy = await FaultProxy.start('127.0.0.1', server.port)
  })
  afterAll(async () => {
    await proxy?.close()
    await server?.stop()
  })

  for (const harness of harnesses) {
    it(`${harness.name}: every concurrency slot comes back once`, async () => {
      await fc.assert(
        fc.asyncProperty(
          fc.integer({ min: 1, max: 3 }),
          fc.constantFrom(0, 15),
          fc.array(
            fc.record({
              slow: fc.boolean(),
              leaveAfterMs: fc.option(fc.constantFrom(0, 2, 8, 20, 40), { nil: null }),
            }),
            { minLength: 1, maxLength: 8 },
          ),
          async (limit, storeDelayMs, clients: Client[]) => {
            const store = createRedisStore({
              url: `redis://127.0.0.1:${proxy.port}`,
              prefix: `aborts${Date.now()}${Math.floor(Math.random() * 1e9)}`,
              callTimeoutMs: 1000,
            })
            await store.ready
            const limiter = createLimiter({
              store,
              rules: [{ id: 'slots', algorithm: 'concurrency', limit, key: ['ip'] }],
              // The store's deadline, not the limiter's 50 ms: a loaded machine must not turn
              // the decisions this test counts into unjudged ones.
              decisionTimeoutMs: 1000,
            })
            // For the whole run: a delay changed while bytes are on their way reorders them.
            proxy.setDelay(storeDelayMs)
            const app = await harness.start({
              limiter,
              routes: ROUTES,
              trustProxy: false,
              options: {},
              // A slow handler works for 30 ms: clients leave before, during or after.
              enter: (route) =>
                route.slow ? new Promise((r) => setTimeout(r, 30)) : Promise.resolve(),
              beforeLimiter: () => Promise.resolve(),
            })
            try {
              const statuses = await Promise.all(
                clients.map((c) => send(app.url, c.slow ? '/slow' : '/', c.leaveAfterMs)),
              )
              for (const s of statuses) expect([0, 200, 429]).toContain(s)
              await eventually(async () => {
                const [state] = await limiter.get('127.0.0.1')
                return state?.remaining === limit
              }, 3000)
              // Given back once: the limit holds again.
              const after = await Promise.all(
                Array.from({ length: limit + 1 }, () =>
                  Promise.resolve(
                    limiter.check({ method: 'GET', path: '/', ip: '127.0.0.1', headers: {} }),
                  ),
                ),
              )
              expect(after.map((d) => d.allowed)).toEqual([
                ...Array<boolean>(limit).fill(true),
                false,
              ])
            } finally {
              await app.close()
              await limiter.close()
              proxy.setDelay(0)
            }
          },
        ),
        { numRuns: 12 },
      )
    }, 120_000)
  }
})
