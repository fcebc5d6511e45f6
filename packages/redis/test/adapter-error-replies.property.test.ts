import fc from 'fast-check'
import { Redis } from 'ioredis'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createLimiter, type Logger } from '@floodgate/core'
import type { HarnessSetup, RunningApp } from '@floodgate/core/testing'
import { createRedisStore } from '@floodgate/redis'
import { startExpress } from '../../express/test/harness.js'
import { startFastify } from '../../fastify/test/harness.js'
import { startKoa } from '../../koa/test/harness.js'
import { RedisServer, redisBinariesAvailable } from './helpers/redis-server.js'

// Error replies from a real redis-server, through real Express, Fastify and Koa apps on a
// RedisStore: the client gets the handler's 2xx (fail-open, no RateLimit headers), the log
// one fail-open line naming Redis's answer, and once the error stops requests are judged again.

const binaries = redisBinariesAvailable()
if (!binaries && process.env.CI === 'true') throw new Error('redis-server is required under CI')

const ADAPTERS = { express: startExpress, fastify: startFastify, koa: startKoa } as const
const ALGORITHMS = ['token-bucket', 'gcra', 'fixed-window', 'sliding-window-counter'] as const
type Kind = 'OOM' | 'NOPERM' | 'BUSY' | 'READONLY'
const KINDS: Kind[] = ['OOM', 'NOPERM', 'BUSY', 'READONLY']

/** A logger that keeps the warnings' codes and error texts. */
function recordingLogger(): Logger & { lines: { code: unknown; text: string }[] } {
  const lines: { code: unknown; text: string }[] = []
  const keep = (fields: unknown, msg?: string): void => {
    const f = fields as { code?: unknown; err?: unknown } | undefined
    lines.push({
      code: f?.code,
      text: `${msg ?? ''} ${f?.err instanceof Error ? f.err.message : ''}`,
    })
  }
  return { lines, warn: keep, error: keep, info: () => {}, debug: () => {} }
}

const hasRateLimitHeaders = (headers: Record<string, unknown>): boolean =>
  Object.keys(headers).some((h) => /^(x-)?ratelimit/.test(h) || h === 'retry-after')

describe.skipIf(!binaries)('error replies from Redis through the HTTP adapters', () => {
  let server: RedisServer
  let primary: RedisServer
  let admin: Redis
  let n = 0

  beforeAll(async () => {
    // A user of the store's own, whose rights can be taken away and given back.
    server = await RedisServer.start(
      ['--busy-reply-threshold', '50'],
      'user lim on nopass ~* +@all\n',
    )
    // What the store's Redis follows while it is made a replica.
    primary = await RedisServer.start()
    admin = new Redis(server.port, '127.0.0.1', { maxRetriesPerRequest: 0 })
    admin.on('error', () => {})
  })
  afterAll(async () => {
    admin?.disconnect()
    await server?.stop()
    await primary?.stop()
  })

  /** Start the error; resolves with how to stop it. */
  async function begin(kind: Kind): Promise<() => Promise<void>> {
    if (kind === 'OOM') {
      await admin.config('SET', 'maxmemory-policy', 'noeviction')
      await admin.config('SET', 'maxmemory', '1')
      return async () => void (await admin.config('SET', 'maxmemory', '0'))
    }
    if (kind === 'NOPERM') {
      await admin.call('ACL', 'SETUSER', 'lim', '-@scripting')
      return async () => void (await admin.call('ACL', 'SETUSER', 'lim', '+@all'))
    }
    if (kind === 'READONLY') {
      await admin.call('REPLICAOF', '127.0.0.1', String(primary.port))
      return async () => {
        await admin.call('REPLICAOF', 'NO', 'ONE')
        // The ACL user is the server's own config: a replica keeps it.
      }
    }
    // BUSY: a script that loops until killed, on a connection of its own.
    const looper = new Redis(server.port, '127.0.0.1', { maxRetriesPerRequest: 0 })
    looper.on('error', () => {})
    const running = looper.eval('while true do end', 0).catch(() => {})
    // Past busy-reply-threshold, every other client gets BUSY.
    for (let i = 0; i < 50; i++) {
      await new Promise((r) => setTimeout(r, 20))
      const busy = await admin.ping().then(
        () => false,
        (err: Error) => err.message.startsWith('BUSY'),
      )
      if (busy) break
    }
    return async () => {
      await admin.call('SCRIPT', 'KILL').catch(() => {})
      await running
      looper.disconnect()
    }
  }

  it('adapter × algorithm × error kind: a 2xx without RateLimit headers, one line naming the error, then judged again', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom(...(Object.keys(ADAPTERS) as (keyof typeof ADAPTERS)[])),
        fc.constantFrom(...ALGORITHMS),
        fc.constantFrom(...KINDS),
        async (adapter, algorithm, kind) => {
          const logger = recordingLogger()
          const store = createRedisStore({
            url: `redis://lim:x@127.0.0.1:${server.port}`,
            prefix: `fg-adapter-errors-${++n}`,
            callTimeoutMs: 1000,
          })
          const limiter = createLimiter({
            store,
            rules: [{ id: 'r', limit: 2, window: '1m', algorithm }],
            decisionTimeoutMs: 1000,
            logger,
          })
          const setup: HarnessSetup = {
            limiter,
            routes: [{ method: 'GET', path: '/api' }],
            trustProxy: false,
            options: {},
            enter: async () => {},
            beforeLimiter: async () => {},
          }
          let app: RunningApp | undefined
          let end: (() => Promise<void>) | undefined
          try {
            await store.ready
            app = await ADAPTERS[adapter](setup)
            end = await begin(kind)
            for (let i = 0; i < 3; i++) {
              const r = await app.send({ method: 'GET', path: '/api' })
              expect(r.status).toBe(200)
              expect(hasRateLimitHeaders(r.headers)).toBe(false)
            }
            const said = logger.lines.filter((l) => l.code === 'FG_WRN_STORE_FAILED_OPEN')
            expect(said).toHaveLength(1)
            expect(said[0]!.text).toContain(kind)
            await end()
            end = undefined
            // Judged again: two pass with headers, the third is refused. A store that reopened
            // its connection (READONLY) passes requests unjudged until it is back: bounded.
            const statuses: number[] = []
            for (let i = 0; i < 100 && statuses.length < 3; i++) {
              const r = await app.send({ method: 'GET', path: '/api' })
              expect(r.status).toBeLessThan(500)
              if (hasRateLimitHeaders(r.headers)) statuses.push(r.status)
              else await new Promise((resolve) => setTimeout(resolve, 50))
            }
            expect(statuses).toEqual([200, 200, 429])
          } finally {
            if (end) await end()
            await app?.close()
            await limiter.close()
          }
        },
      ),
      { numRuns: 48 },
    )
  }, 180_000)
})
