import { spawnSync } from 'node:child_process'
import { Redis } from 'ioredis'
import { RedisServer, freePort } from './redis-server.js'

/**
 * A throwaway Redis Cluster on loopback: `primaries` masters (and as many replicas with
 * `replicas: 1`), created with `redis-cli --cluster create`; `serverArgs` are passed to every
 * redis-server. Stopped (processes killed, temp dirs removed) by `stop()`.
 */
export class RedisClusterFixture {
  private constructor(readonly nodes: RedisServer[]) {}

  static async start(
    options: { primaries?: number; replicas?: 0 | 1; serverArgs?: string[] } = {},
  ): Promise<RedisClusterFixture> {
    const primaries = options.primaries ?? 3
    const count = primaries * (1 + (options.replicas ?? 0))
    const nodes: RedisServer[] = []
    for (let i = 0; i < count; i++) {
      const port = await freePort()
      const server = new RedisServer(port, [
        '--cluster-enabled',
        'yes',
        '--cluster-config-file',
        `nodes-${port}.conf`,
        // Fast failover for the tests; production keeps the default (15 s).
        '--cluster-node-timeout',
        '1000',
        ...(options.serverArgs ?? []),
      ])
      nodes.push(server)
    }
    const fixture = new RedisClusterFixture(nodes)
    try {
      await Promise.all(nodes.map((n) => n.start()))
      const create = spawnSync(
        'redis-cli',
        [
          '--cluster',
          'create',
          ...nodes.map((n) => `127.0.0.1:${n.port}`),
          '--cluster-replicas',
          String(options.replicas ?? 0),
          '--cluster-yes',
        ],
        { encoding: 'utf8', timeout: 20_000 },
      )
      if (create.status !== 0)
        throw new Error(`redis-cli --cluster create failed: ${create.stdout}${create.stderr}`)
      await fixture.waitUntilOk()
      // A replica that never synced refuses to fail over: wait for every link to be up.
      if (options.replicas) await fixture.waitForReplicas(count - primaries)
    } catch (err) {
      await fixture.stop()
      throw err
    }
    return fixture
  }

  get seeds(): { host: string; port: number }[] {
    return this.nodes.map((n) => ({ host: '127.0.0.1', port: n.port }))
  }

  /** Wait (bounded: 15 s) until every live node reports `cluster_state:ok`. */
  async waitUntilOk(nodes: RedisServer[] = this.nodes): Promise<void> {
    const deadline = Date.now() + 15_000
    for (;;) {
      const states = await Promise.all(nodes.map((n) => clusterState(n.port)))
      if (states.every((s) => s === 'ok')) return
      if (Date.now() > deadline) throw new Error(`cluster not ok: ${states.join(',')}`)
      await new Promise((r) => setTimeout(r, 100))
    }
  }

  /** Wait (bounded: 15 s) until `n` replicas report `master_link_status:up`. */
  async waitForReplicas(n: number): Promise<void> {
    const deadline = Date.now() + 15_000
    for (;;) {
      const infos = await Promise.all(this.nodes.map((node) => replicationInfo(node.port)))
      if (infos.filter((i) => /master_link_status:up/.test(i)).length >= n) return
      if (Date.now() > deadline) throw new Error('replicas did not sync in time')
      await new Promise((r) => setTimeout(r, 100))
    }
  }

  /** The node serving `slot` as primary, from CLUSTER SHARDS/SLOTS of a live node. */
  async primaryOf(slot: number, via: RedisServer): Promise<RedisServer> {
    const c = new Redis(via.port, '127.0.0.1', { maxRetriesPerRequest: 0 })
    try {
      const slots = (await c.cluster('SLOTS')) as unknown as [number, number, [string, number]][]
      for (const [from, to, [, port]] of slots) {
        if (slot >= from && slot <= to) return this.nodes.find((n) => n.port === port)!
      }
      throw new Error(`slot ${slot} not served`)
    } finally {
      c.disconnect()
    }
  }

  async stop(): Promise<void> {
    await Promise.all(this.nodes.map((n) => n.stop()))
  }
}

async function clusterState(port: number): Promise<string> {
  const c = new Redis(port, '127.0.0.1', {
    maxRetriesPerRequest: 0,
    retryStrategy: () => null,
    lazyConnect: true,
  })
  c.on('error', () => {})
  try {
    await c.connect()
    const info = await c.cluster('INFO')
    return /cluster_state:(\w+)/.exec(info)?.[1] ?? 'unknown'
  } catch {
    return 'down'
  } finally {
    c.disconnect()
  }
}

async function replicationInfo(port: number): Promise<string> {
  const c = new Redis(port, '127.0.0.1', {
    maxRetriesPerRequest: 0,
    retryStrategy: () => null,
    lazyConnect: true,
  })
  c.on('error', () => {})
  try {
    await c.connect()
    return await c.info('replication')
  } catch {
    return ''
  } finally {
    c.disconnect()
  }
}
