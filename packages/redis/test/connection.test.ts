import { Redis } from 'ioredis'
import { describe, expect, it } from 'vitest'
import { OptionsError } from '@floodgate/core'
import { RedisConnection } from '../src/connection.js'
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
