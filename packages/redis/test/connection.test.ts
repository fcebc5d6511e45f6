import { Cluster, Redis } from 'ioredis'
import { describe, expect, it } from 'vitest'
import { OptionsError, type Logger } from '@floodgate/core'
import { createRedisStore, createSyncedStore } from '@floodgate/redis'
import { RedisConnection } from '../src/connection.js'
import { testRule } from '@floodgate/core/testing'
import { REDIS_URL, redisAvailable } from './helpers/redis.js'

const available = await redisAvailable()

describe('RedisConnection', () => {
  it('refuses more than one of client, url, cluster', () => {
    expect(
      () => new RedisConnection({ url: REDIS_URL, cluster: [{ host: '127.0.0.1', port: 1 }] }, 50),
    ).toThrow(OptionsError)
  })

  it.skipIf(!available)('creates, readies and closes a client of its own', async () => {
    const c = new RedisConnection({ url: REDIS_URL }, 50)
    await c.ready
    expect(c.connected).toBe(true)
    expect(c.isCluster).toBe(false)
    const ended = new Promise((resolve) => c.client.once('end', resolve))
    await c.close()
    await ended
  })

  it.skipIf(!available)('never closes a client it was given', async () => {
    const own = new Redis(REDIS_URL)
    const c = new RedisConnection({ client: own }, 50)
    await c.ready
    await c.close()
    expect(await own.ping()).toBe('PONG')
    own.disconnect()
  })
})

/** A logger that keeps what it was asked to warn. */
function capturing(): Logger & { warned: { fields: Record<string, unknown>; msg?: string }[] } {
  const warned: { fields: Record<string, unknown>; msg?: string }[] = []
  const noop = (): void => {}
  return {
    warned,
    debug: noop,
    info: noop,
    warn: (fields: unknown, msg?: string) =>
      warned.push({ fields: fields as Record<string, unknown>, msg }),
    error: noop,
  }
}

describe('a client passed in', () => {
  const safe = {
    lazyConnect: true,
    enableOfflineQueue: false,
    maxRetriesPerRequest: 0,
    autoResendUnfulfilledCommands: false,
  }

  it('with ioredis defaults: both stores warn once, naming every setting to change', async () => {
    const client = new Redis(REDIS_URL, { lazyConnect: true })
    for (const make of [createRedisStore, createSyncedStore]) {
      const logger = capturing()
      const store = make({ client, logger })
      expect(logger.warned).toHaveLength(1)
      expect(logger.warned[0]!.fields).toMatchObject({
        code: 'FG_WRN_REDIS_CLIENT_UNSAFE',
        settings: [
          'enableOfflineQueue: false',
          'maxRetriesPerRequest: 0',
          'autoResendUnfulfilledCommands: false',
        ],
      })
      expect(logger.warned[0]!.msg).toContain('autoResendUnfulfilledCommands: false')
      await store.close()
    }
    client.disconnect()
  })

  it('with the limiter-safe settings: no warning', async () => {
    const client = new Redis(REDIS_URL, safe)
    const logger = capturing()
    const store = createRedisStore({ client, logger })
    expect(logger.warned).toHaveLength(0)
    await store.close()
    client.disconnect()
  })

  it('a Cluster: its node options and retryDelayOnFailover are checked too', async () => {
    const half = new Cluster([{ host: '127.0.0.1', port: 1 }], {
      lazyConnect: true,
      enableOfflineQueue: false,
      redisOptions: { maxRetriesPerRequest: 0 },
    })
    const logger = capturing()
    const store = createRedisStore({ client: half, logger })
    expect(logger.warned[0]!.fields['settings']).toEqual([
      'autoResendUnfulfilledCommands: false',
      'retryDelayOnFailover: 0',
    ])
    await store.close()
    const tuned = new Cluster([{ host: '127.0.0.1', port: 1 }], {
      lazyConnect: true,
      enableOfflineQueue: false,
      retryDelayOnFailover: 0,
      redisOptions: { maxRetriesPerRequest: 0, autoResendUnfulfilledCommands: false },
    })
    const quiet = capturing()
    await createRedisStore({ client: tuned, logger: quiet }).close()
    expect(quiet.warned).toHaveLength(0)
    half.disconnect()
    tuned.disconnect()
  })
})

describe.skipIf(!available)('a client passed in, by state', () => {
  const safe = { enableOfflineQueue: false, maxRetriesPerRequest: 0 }
  const bounded = <T>(p: Promise<T>): Promise<T | 'still pending'> =>
    Promise.race([
      p,
      new Promise<'still pending'>((r) => setTimeout(() => r('still pending'), 2000).unref()),
    ])

  it('with lazyConnect: ready connects it, and so does a SyncedStore round', async () => {
    for (const make of [createRedisStore, createSyncedStore]) {
      const client = new Redis(REDIS_URL, { ...safe, lazyConnect: true })
      const store = make({ client, logger: capturing() })
      // Nothing connected a lazy client until the first command, and ready sends none.
      expect(await bounded(store.ready.then(() => 'ready'))).toBe('ready')
      expect(client.status).toBe('ready')
      await store.close()
      client.disconnect()
    }
    // A SyncedStore sends nothing while disconnected: its rounds failed for good.
    const client = new Redis(REDIS_URL, { ...safe, lazyConnect: true })
    const synced = createSyncedStore({ client, logger: capturing(), syncMs: 600_000 })
    synced.consume(
      [
        {
          rule: testRule('token-bucket', 5, 1000),
          key: 'lazy',
          cost: 1,
          maxWaitMs: 0,
          shadow: false,
        },
      ],
      0,
    )
    await synced.syncNow()
    expect(await bounded(new Promise((r) => client.once('ready', () => r('ready'))))).toBe('ready')
    await synced.close()
    client.disconnect()
  })

  it('with lazyConnect: the application may still connect it itself after creating the store', async () => {
    for (const make of [createRedisStore, createSyncedStore]) {
      const client = new Redis(REDIS_URL, { ...safe, lazyConnect: true })
      const store = make({ client, logger: capturing() })
      await client.connect()
      await store.ready
      await store.close()
      client.disconnect()
    }
  })

  it('closed, or in subscriber or monitor mode: refused at construction, naming why', async () => {
    const closed = new Redis(REDIS_URL, { ...safe, lazyConnect: true })
    closed.disconnect()
    const subscriber = new Redis(REDIS_URL, safe)
    await new Promise((r) => subscriber.once('ready', r))
    await subscriber.subscribe('fg-connection-test')
    const base = new Redis(REDIS_URL, safe)
    await new Promise((r) => base.once('ready', r))
    const monitor = await base.monitor()
    const cases: [Redis, RegExp][] = [
      [closed, /closed/],
      [subscriber, /subscriber mode/],
      [monitor, /monitor mode/],
    ]
    for (const [client, why] of cases) {
      for (const make of [createRedisStore, createSyncedStore]) {
        // Each used to be taken, and every request then passed unjudged for the store's life.
        expect(() => make({ client, logger: capturing() })).toThrow(OptionsError)
        expect(() => make({ client, logger: capturing() })).toThrow(why)
      }
    }
    for (const c of [subscriber, monitor, base]) c.disconnect()
  })
})

describe('ready, for a store closed before it ever connected', () => {
  // Nothing listens on this port (in this suite's private range): the client never connects.
  const nowhere = 'redis://127.0.0.1:7951'
  const settled = <T>(p: Promise<T>): Promise<T | 'still pending'> =>
    Promise.race([
      p,
      new Promise<'still pending'>((r) => setTimeout(() => r('still pending'), 2000).unref()),
    ])

  it('resolves, and leaves no ready or end listener on the closed client, whether read before or after close()', async () => {
    for (const make of [createRedisStore, createSyncedStore]) {
      for (const readFirst of [true, false]) {
        const store = make({ url: nowhere, logger: capturing() })
        const readyBefore = readFirst ? store.ready : undefined
        await store.close()
        const ready = readyBefore ?? store.ready
        expect(await settled(ready.then(() => 'settled'))).toBe('settled')
        expect(store.client.status).toBe('end')
        // No one-time listener is left waiting (the store's own lasting one stays).
        const once = (event: string): number =>
          store.client.rawListeners(event).filter((l) => 'listener' in l).length
        expect([once('ready'), once('end')]).toEqual([0, 0])
      }
    }
  })
})
