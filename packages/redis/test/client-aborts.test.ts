import { request as httpRequest } from 'node:http'
import fc from 'fast-check'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { IncomingMessage } from 'node:http'
import { createLimiter } from '@floodgate/core'
import type { Store } from '@floodgate/core'
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

/**
 * One request: its path, and when its client leaves: ms after sending, 'sent' as soon as its
 * bytes are out (before the server has read them), null: it stays.
 */
type Leave = number | 'sent' | null
interface Client {
  readonly slow: boolean
  readonly leaveAfterMs: Leave
}

/** A request sent: its status (0 when the client left first), and whether its bytes went out. */
interface Sent {
  readonly status: number
  /** The whole request reached the socket, so the server sees it, however late. */
  readonly delivered: boolean
}

/** Send a GET, leaving after `leaveAfterMs` unless null. */
function send(url: string, path: string, leaveAfterMs: Leave): Promise<Sent> {
  return new Promise((resolve) => {
    let delivered = false
    const req = httpRequest(`${url}${path}`, { agent: false }, (res) => {
      res.resume()
      res.on('end', () => resolve({ status: res.statusCode ?? 0, delivered: true }))
      res.on('error', () => resolve({ status: 0, delivered: true }))
    })
    req.on('finish', () => {
      delivered = true
      if (leaveAfterMs === 'sent') req.destroy()
    })
    req.on('error', () => resolve({ status: 0, delivered }))
    req.end()
    if (typeof leaveAfterMs === 'number') setTimeout(() => req.destroy(), leaveAfterMs)
  })
}

/**
 * The store, with a count of its consume and refund calls still unanswered: while one is out,
 * a slot may yet be taken or given back.
 */
function counting(store: Store): { readonly store: Store; readonly pending: () => number } {
  let pending = 0
  const track = <T>(answer: T): T => {
    if (answer instanceof Promise) {
      pending++
      void answer.then(
        () => pending--,
        () => pending--,
      )
    }
    return answer
  }
  // Every other member is the store's own, called on the store itself.
  const wrapped = new Proxy(store, {
    get(target, name) {
      if (name === 'consume') {
        return (...args: Parameters<Store['consume']>) => track(target.consume(...args))
      }
      if (name === 'refund') {
        return (...args: Parameters<Store['refund']>) => track(target.refund(...args))
      }
      const value: unknown = Reflect.get(target, name, target)
      return typeof value === 'function' ? (value as () => unknown).bind(target) : value
    },
  })
  return { store: wrapped, pending: () => pending }
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
              leaveAfterMs: fc.option(fc.constantFrom<Leave>('sent', 0, 2, 8, 20, 40), {
                nil: null,
              }),
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
            const counted = counting(store)
            const limiter = createLimiter({
              store: counted.store,
              rules: [{ id: 'slots', algorithm: 'concurrency', limit, key: ['ip'] }],
              // The store's deadline, not the limiter's 50 ms: a loaded machine must not turn
              // the decisions this test counts into unjudged ones.
              decisionTimeoutMs: 1000,
            })
            const arrived: IncomingMessage[] = []
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
              beforeLimiter: (req: IncomingMessage) => {
                arrived.push(req)
                return Promise.resolve()
              },
            })
            try {
              const sent = await Promise.all(
                clients.map((c) => send(app.url, c.slow ? '/slow' : '/', c.leaveAfterMs)),
              )
              for (const s of sent) expect([0, 200, 429]).toContain(s.status)
              // A client may be gone before the server even reads its request: wait until every
              // request sent has arrived and ended, and no store call is out, before reading.
              const delivered = sent.filter((s) => s.delivered).length
              await eventually(async () => {
                if (arrived.length < delivered) return false
                if (arrived.some((req) => req.socket.destroyed !== true)) return false
                if (counted.pending() > 0 || limiter.counters().inFlight.size > 0) return false
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
