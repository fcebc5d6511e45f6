import { fileURLToPath } from 'node:url'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { forkFleetHost } from './helpers/fleet-host.js'
import { RedisClusterFixture } from './helpers/redis-cluster.js'
import { redisBinariesAvailable } from './helpers/redis-server.js'

const binaries = redisBinariesAvailable()
if (!binaries && process.env.CI === 'true') throw new Error('redis-server is required under CI')

const worker = fileURLToPath(new URL('./fleet/cluster-ready-worker.ts', import.meta.url))
const HOSTS = 3

interface Report {
  unjudged: number
  errors: string[]
}

describe.skipIf(!binaries)('`await store.ready` on a Redis Cluster means ready', () => {
  let cluster: RedisClusterFixture

  beforeAll(async () => {
    cluster = await RedisClusterFixture.start({ primaries: 3 }).catch(() =>
      RedisClusterFixture.start({ primaries: 3 }),
    )
  }, 60_000)
  afterAll(async () => {
    await cluster?.stop()
  })

  for (const kind of ['redis', 'synced'] as const) {
    it(`${kind}: fresh hosts judge all 64 checks they send right after ready`, async () => {
      // Separate processes: each host's client starts with no connection to any node.
      const hosts = Array.from({ length: HOSTS }, (_, i) =>
        forkFleetHost<Report>(worker, { kind, seeds: cluster.seeds, prefix: `ready${i}` }),
      )
      const reports = await Promise.all(hosts.map((h) => h.report))
      expect(reports).toEqual(hosts.map(() => ({ unjudged: 0, errors: [] })))
    }, 60_000)
  }
})
