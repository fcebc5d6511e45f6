import { describe, expect, it, onTestFinished } from 'vitest'
import { testRule } from '@floodgate/core/testing'
import { RedisConnection } from '../../src/connection.js'
import { hashTag } from '../../src/redis-key.js'
import {
  MAX_KEYS_PER_CALL,
  SyncExchange,
  callGroups,
  type FleetLevel,
} from '../../src/synced/sync-exchange.js'
import { TrackedKeys, type Tracked } from '../../src/synced/tracked-keys.js'
import { FaultProxy } from '../helpers/fault-proxy.js'
import { REDIS_URL, adminConnection, redisAvailable, uniquePrefix } from '../helpers/redis.js'
import { ScriptedRespServer } from '../helpers/scripted-resp-server.js'

const available = await redisAvailable()
const prefix = uniquePrefix('sync-exchange')
const rule = testRule('token-bucket', 10, 1000)

/** `n` keys, each with one batch of `units` sent as seq 1. */
function keysWithBatch(n: number, units: number, name: string): Tracked[] {
  const keys = new TrackedKeys(prefix, 100_000, () => {})
  return Array.from({ length: n }, (_, i) => {
    const t = keys.track(rule, `${name}-${i}`)
    t.unacked.push(1, units)
    t.lastUseMs = Date.now()
    return t
  })
}

describe('callGroups', () => {
  it(`on a single Redis, cuts a round into calls of at most ${MAX_KEYS_PER_CALL} keys, in order`, () => {
    const batch = keysWithBatch(600, 1, 'chunks')
    const groups = callGroups(batch, false)
    expect(groups.map((g) => g.length)).toEqual([256, 256, 88])
    expect(groups.flat()).toEqual(batch)
    expect(callGroups([], false)).toEqual([])
  })

  it('on a Cluster, makes one call per key: a slot being migrated refuses calls of several', () => {
    const keys = new TrackedKeys(prefix, 1000, () => {})
    const other = testRule('gcra', 5, 1000)
    const batch = [
      keys.track(rule, 'a'),
      keys.track(rule, 'b'),
      keys.track(other, 'a'),
      keys.track(other, 'c'),
    ]
    const groups = callGroups(batch, true)
    expect(groups).toEqual(batch.map((t) => [t]))
  })
})

describe.skipIf(!available)('SyncExchange on Redis', () => {
  const redis = adminConnection(prefix)

  async function exchange(url = REDIS_URL, timeoutMs = 1000): Promise<SyncExchange> {
    const connection = new RedisConnection({ url }, timeoutMs)
    onTestFinished(() => connection.close())
    await connection.ready
    const x = new SyncExchange(connection, { timeoutMs, syncMs: 100, clock: Date.now })
    // Issue seq 1, the batches' (Redis reads a host's recorded seq above its newest as none).
    x.nextSeq()
    return x
  }

  it('sends every key of a round, 256 per call, and answers each fleet level once', async () => {
    const x = await exchange()
    const batch = keysWithBatch(300, 2, 'round')
    const answered: { group: readonly Tracked[]; levels: readonly FleetLevel[] }[] = []
    const failure = await x.send(batch, (group, levels) => answered.push({ group, levels }))
    expect(failure).toBeUndefined()
    expect(answered.map((a) => a.group.length).sort()).toEqual([256, 44])
    for (const { levels } of answered) {
      for (const level of levels) expect(level).toEqual({ used: 2, hosts: 1 })
    }
    const total = async (t: Tracked): Promise<string | null> => redis.admin.hget(t.redisKey, 't')
    expect(await total(batch[299]!)).toBe('2')
    expect(batch[0]!.redisKey).toBe(`${prefix}:{${hashTag('round-0')}}:${rule.stateId}:synced`)
    // The same batch again (its reply was lost, say): Redis skips it by its seq.
    expect(await x.send(batch, () => {})).toBeUndefined()
    expect(await total(batch[0]!)).toBe('2')
    expect(x.inFlight).toBe(0)
  })

  it('gives up at the deadline, ignores the late reply, and counts the call in flight until it comes', async () => {
    const url = new URL(REDIS_URL)
    const proxy = await FaultProxy.start(url.hostname, Number(url.port || 6379))
    onTestFinished(() => proxy.close())
    const x = await exchange(`redis://${url.hostname}:${proxy.port}`, 100)
    const batch = keysWithBatch(3, 1, 'late')
    let answers = 0
    proxy.setMode('stall')
    const failure = await x.send(batch, () => answers++)
    expect(String(failure)).toMatch(/no answer within 100 ms/)
    expect(x.inFlight).toBe(1)
    proxy.setMode('pass')
    const deadline = Date.now() + 5000
    while (x.inFlight > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10))
    expect(x.inFlight).toBe(0)
    expect(answers).toBe(0)
    // The units did reach Redis: only the reply was late.
    expect(await redis.admin.hget(batch[0]!.redisKey, 't')).toBe('1')
  })

  it('reports a call Redis refuses as the failure', async () => {
    // A Redis that answers the sync script with an error (a full Redis under noeviction): the
    // failure is its own words. (A fleet counter of someone else's numbers no longer makes
    // Redis refuse: the script starts it afresh.)
    const server = await ScriptedRespServer.start(() =>
      Buffer.from('-OOM command not allowed when used memory > maxmemory\r\n'),
    )
    onTestFinished(() => server.stop())
    const x = await exchange(server.url)
    const [t] = keysWithBatch(1, 1, 'refused')
    const failure = await x.send([t!], () => {})
    expect(String(failure)).toMatch(/OOM command not allowed/)
  })
})
