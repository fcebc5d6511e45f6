import { Redis } from 'ioredis'
import { afterEach, describe, expect, it } from 'vitest'
import { createLimiter, type Logger } from '@floodgate/core'
import type { RequestFacts } from '@floodgate/core/http'
import { createRedisStore } from '@floodgate/redis'
import { FaultProxy } from './helpers/fault-proxy.js'
import { RedisServer, redisBinariesAvailable } from './helpers/redis-server.js'

const binaries = redisBinariesAvailable()
if (!binaries && process.env.CI === 'true') throw new Error('redis-server is required under CI')

const facts = (ip: string): RequestFacts => ({ method: 'GET', path: '/api', ip, headers: {} })

/** A logger that keeps every warning's message and error text. */
function recordingLogger(): Logger & { lines: string[] } {
  const lines: string[] = []
  const keep = (fields: unknown, msg?: string): void => {
    const err = (fields as { err?: unknown } | undefined)?.err
    lines.push(`${msg ?? ''} ${err instanceof Error ? err.message : ''}`)
  }
  return { lines, warn: keep, error: keep, info: () => {}, debug: () => {} }
}

/** Check until a decision is Redis's own (not failed open); bounded in time and count. */
async function untilJudged(
  check: () => { failedOpen: boolean } | Promise<{ failedOpen: boolean }>,
  ms: number,
): Promise<number> {
  const start = Date.now()
  for (let i = 0; i < 1000; i++) {
    if (!(await check()).failedOpen) return Date.now() - start
    if (Date.now() - start > ms) break
    await new Promise((r) => setTimeout(r, 100))
  }
  throw new Error(`every check failed open for ${ms} ms`)
}

const cleanup: (() => Promise<void>)[] = []
afterEach(async () => {
  for (const c of cleanup.splice(0).reverse()) await c()
})

describe.skipIf(!binaries)('a Redis that is connected but not ready', () => {
  it('one that accepts the connection and never answers: the store reconnects once it serves again, and says why it failed', async () => {
    const server = await RedisServer.start()
    cleanup.push(() => server.stop())
    const proxy = await FaultProxy.start('127.0.0.1', server.port)
    cleanup.push(() => proxy.close())
    proxy.setMode('stall')
    const logger = recordingLogger()
    // A short deadline: what the store waits for before it drops a silent link is 20 of
    // them (at least 1 s); this test is about that bound.
    const store = createRedisStore({ url: `redis://127.0.0.1:${proxy.port}`, callTimeoutMs: 100 })
    const limiter = createLimiter({
      store,
      rules: [{ id: 'r', limit: 100, window: '1m' }],
      decisionTimeoutMs: 100,
      failOpenLogIntervalMs: 1,
      logger,
    })
    cleanup.push(() => limiter.close())
    // The link is accepted and forgotten (a NAT, a half-dead proxy); new links pass.
    await new Promise((r) => setTimeout(r, 200))
    proxy.blackholeOpen()
    proxy.setMode('pass')
    expect(await limiter.check(facts('10.0.0.1'))).toMatchObject({ failedOpen: true })
    await untilJudged(() => limiter.check(facts('10.0.0.1')), 10_000)
    expect(logger.lines.join('\n')).toMatch(/ready check/)
  })

  it('one loading its dataset (LOADING): fail-opens name it, and decisions resume within about a second of the end', async () => {
    const server = await RedisServer.start(['--enable-debug-command', 'yes'])
    cleanup.push(() => server.stop())
    const admin = new Redis(server.port, '127.0.0.1', { maxRetriesPerRequest: 0 })
    admin.on('error', () => {})
    cleanup.push(() => Promise.resolve(admin.disconnect()))
    // 20 000 keys loaded at 100 µs each: about 2 s of LOADING after a restart.
    await admin.call('DEBUG', 'POPULATE', '20000', 'fgfill')
    await admin.save()
    const logger = recordingLogger()
    const store = createRedisStore({ url: server.url, callTimeoutMs: 2000 })
    const limiter = createLimiter({
      store,
      rules: [{ id: 'r', limit: 100, window: '1m' }],
      decisionTimeoutMs: 2000,
      failOpenLogIntervalMs: 1,
      logger,
    })
    cleanup.push(() => limiter.close())
    await store.ready
    // Up once it answers PING (LOADING). Redis serves clients between loading chunks of
    // 2 MB by default, more than this whole dataset: every 1 kB here.
    await server.restart([
      '--key-load-delay',
      '100',
      '--loading-process-events-interval-bytes',
      '1024',
    ])
    let loadedAt = 0
    const probe = new Redis(server.port, '127.0.0.1', { maxRetriesPerRequest: 0 })
    probe.on('error', () => {})
    cleanup.push(() => Promise.resolve(probe.disconnect()))
    const loaded = (async () => {
      for (let i = 0; i < 600; i++) {
        if (/loading:0/.test(await probe.info('persistence'))) return (loadedAt = Date.now())
        await new Promise((r) => setTimeout(r, 50))
      }
      throw new Error('Redis never finished loading')
    })()
    loaded.catch(() => {})
    expect(await limiter.check(facts('10.0.0.2'))).toMatchObject({ failedOpen: true })
    await untilJudged(() => limiter.check(facts('10.0.0.2')), 30_000)
    await loaded
    expect(logger.lines.join('\n')).toMatch(/LOADING/)
    // ioredis waits for the ETA Redis gives (up to 10 s by default) before it looks again.
    expect(Date.now() - loadedAt).toBeLessThan(3000)
  })

  it('a primary that became a replica behind the same address (READONLY): the store reopens the connection and reaches the new primary', async () => {
    const first = await RedisServer.start()
    cleanup.push(() => first.stop())
    const second = await RedisServer.start(['--replicaof', '127.0.0.1', String(first.port)])
    cleanup.push(() => second.stop())
    const proxy = await FaultProxy.start('127.0.0.1', first.port)
    cleanup.push(() => proxy.close())
    const logger = recordingLogger()
    const store = createRedisStore({ url: `redis://127.0.0.1:${proxy.port}`, callTimeoutMs: 2000 })
    const limiter = createLimiter({
      store,
      rules: [{ id: 'r', limit: 100, window: '1m' }],
      decisionTimeoutMs: 2000,
      failOpenLogIntervalMs: 1,
      logger,
    })
    cleanup.push(() => limiter.close())
    await store.ready
    expect(await limiter.check(facts('10.0.0.3'))).toMatchObject({ failedOpen: false })
    // Failover: the replica is promoted, the old primary follows it, the address moves.
    const admin = (port: number): Redis => {
      const c = new Redis(port, '127.0.0.1', { maxRetriesPerRequest: 0 })
      c.on('error', () => {})
      cleanup.push(() => Promise.resolve(c.disconnect()))
      return c
    }
    await admin(second.port).replicaof('NO', 'ONE')
    await admin(first.port).replicaof('127.0.0.1', String(second.port))
    proxy.retarget(second.port)
    expect(await limiter.check(facts('10.0.0.3'))).toMatchObject({ failedOpen: true })
    expect(logger.lines.join('\n')).toMatch(/READONLY/)
    await untilJudged(() => limiter.check(facts('10.0.0.3')), 10_000)
  })
})
