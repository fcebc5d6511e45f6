import { afterAll, describe, expect, it } from 'vitest'
import { RedisServer, freePort, redisBinariesAvailable } from './helpers/redis-server.js'

// The tests that own a redis-server trust that it is theirs: killing, pausing or filling
// another file's server instead would fail that file, or this one, by chance.

const binaries = redisBinariesAvailable()
if (!binaries && process.env.CI === 'true') throw new Error('redis-server is required under CI')

describe.skipIf(!binaries)('the redis-server test helper', () => {
  const started: RedisServer[] = []
  afterAll(async () => {
    for (const s of started) await s.stop()
  })

  it('never hands out a port twice, though each is released before a server binds it', async () => {
    // A cluster draws all its ports before starting any node (as in FG_TEST_PORTS ranges of
    // 100, where 6 draws repeat a port one time in 7).
    const ports: number[] = []
    for (let i = 0; i < 40; i++) ports.push(await freePort())
    expect(new Set(ports).size).toBe(ports.length)
  })

  it("does not take another redis-server's answer on its port for its own", async () => {
    const first = await RedisServer.start()
    started.push(first)
    const second = new RedisServer(first.port)
    started.push(second)
    // redis-server cannot bind the port and exits; the PING used to reach the first server.
    await expect(second.start()).rejects.toThrow(
      new RegExp(`port ${first.port} is served by another redis-server|exited before answering`),
    )
  })
})
