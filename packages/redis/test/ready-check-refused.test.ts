import { Redis } from 'ioredis'
import { afterEach, describe, expect, it } from 'vitest'
import { createLimiter, type Logger } from '@floodgate/core'
import type { RequestFacts } from '@floodgate/core/http'
import { createRedisStore, createSyncedStore } from '@floodgate/redis'
import { RedisServer, redisBinariesAvailable } from './helpers/redis-server.js'

const binaries = redisBinariesAvailable()
if (!binaries && process.env.CI === 'true') throw new Error('redis-server is required under CI')

const facts = (ip: string): RequestFacts => ({ method: 'GET', path: '/api', ip, headers: {} })

/** A logger that keeps every warning's code and message. */
function recordingLogger(): Logger & { lines: { code: unknown; msg: string }[] } {
  const lines: { code: unknown; msg: string }[] = []
  const keep = (fields: unknown, msg?: string): void => {
    const f = fields as { code?: unknown; err?: unknown } | undefined
    const err = f?.err instanceof Error ? f.err.message : ''
    lines.push({ code: f?.code, msg: `${msg ?? ''} ${err}` })
  }
  return { lines, warn: keep, error: keep, info: () => {}, debug: () => {} }
}

/** Whether `ready` resolves within `ms`. */
async function within(ready: Promise<void>, ms: number): Promise<boolean> {
  let timer: ReturnType<typeof setTimeout> | undefined
  const late = new Promise<false>((r) => (timer = setTimeout(() => r(false), ms)))
  const ok = await Promise.race([ready.then(() => true), late])
  clearTimeout(timer)
  return ok
}

const RENAMED = 'rename-command INFO ""\n'
const NO_INFO_USER = 'user lim on nopass ~* +@all -info\n'

const cleanup: (() => Promise<void>)[] = []
afterEach(async () => {
  for (const c of cleanup.splice(0).reverse()) await c()
})

describe.skipIf(!binaries)('a Redis that refuses the INFO of the ready check', () => {
  for (const how of ['rename-command INFO ""', 'an ACL user without +info'] as const) {
    it(`${how}: a RedisStore's own client decides, and says why once`, async () => {
      const server = await RedisServer.start(
        [],
        how === 'an ACL user without +info' ? NO_INFO_USER : RENAMED,
      )
      cleanup.push(() => server.stop())
      const url =
        how === 'an ACL user without +info' ? `redis://lim:x@127.0.0.1:${server.port}` : server.url
      const logger = recordingLogger()
      const store = createRedisStore({ url, callTimeoutMs: 500, logger })
      const limiter = createLimiter({
        store,
        rules: [{ id: 'r', limit: 2, window: '1m' }],
        decisionTimeoutMs: 500,
        failOpenLogIntervalMs: 1,
        logger,
      })
      cleanup.push(() => limiter.close())
      expect(await within(store.ready, 5000)).toBe(true)
      const decided = []
      for (let i = 0; i < 3; i++) decided.push(await limiter.check(facts('10.0.0.1')))
      expect(decided.map((d) => [d.failedOpen, d.allowed])).toEqual([
        [false, true],
        [false, true],
        [false, false],
      ])
      if (how === 'rename-command INFO ""') {
        const said = logger.lines.filter((l) => l.code === 'FG_WRN_REDIS_READY_CHECK_REFUSED')
        expect(said).toHaveLength(1)
        expect(said[0]!.msg).toMatch(/unknown command 'info'/i)
        // Later connections go without the check, and say nothing more.
        ;(store as unknown as { client: Redis }).client.disconnect(true)
        await new Promise((r) => setTimeout(r, 300))
        expect(await within(store.ready, 5000)).toBe(true)
        expect(
          logger.lines.filter((l) => l.code === 'FG_WRN_REDIS_READY_CHECK_REFUSED'),
        ).toHaveLength(1)
      }
    })
  }

  it('rename-command INFO "": a SyncedStore\'s own client syncs', async () => {
    const server = await RedisServer.start([], RENAMED)
    cleanup.push(() => server.stop())
    const logger = recordingLogger()
    const store = createSyncedStore({ url: server.url, syncMs: 600_000, logger })
    cleanup.push(() => store.close())
    expect(await within(store.ready, 5000)).toBe(true)
    expect(logger.lines.filter((l) => l.code === 'FG_WRN_REDIS_READY_CHECK_REFUSED')).toHaveLength(
      1,
    )
  })

  it('rename-command INFO "": a client passed in keeps its own settings (enableReadyCheck: false makes it work)', async () => {
    const server = await RedisServer.start([], RENAMED)
    cleanup.push(() => server.stop())
    const safe = {
      enableOfflineQueue: false,
      maxRetriesPerRequest: 0,
      autoResendUnfulfilledCommands: false,
    }
    const refused = new Redis(server.port, '127.0.0.1', safe)
    refused.on('error', () => {})
    cleanup.push(() => Promise.resolve(refused.disconnect()))
    const store = createRedisStore({ client: refused, callTimeoutMs: 200 })
    // ioredis reconnects for good: the store never sees it ready, and every call fails open.
    expect(await within(store.ready, 1500)).toBe(false)
    const limiter = createLimiter({
      store,
      rules: [{ id: 'r', limit: 2, window: '1m' }],
      decisionTimeoutMs: 200,
    })
    expect(await limiter.check(facts('10.0.0.2'))).toMatchObject({ failedOpen: true })
    await limiter.close()

    const unchecked = new Redis(server.port, '127.0.0.1', { ...safe, enableReadyCheck: false })
    cleanup.push(() => Promise.resolve(unchecked.disconnect()))
    const works = createRedisStore({ client: unchecked, callTimeoutMs: 500 })
    expect(await within(works.ready, 5000)).toBe(true)
    const ok = createLimiter({ store: works, rules: [{ id: 'r', limit: 2, window: '1m' }] })
    cleanup.push(() => ok.close())
    expect(await ok.check(facts('10.0.0.2'))).toMatchObject({ failedOpen: false })
  })
})
