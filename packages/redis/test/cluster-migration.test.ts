import fc from 'fast-check'
import { Redis } from 'ioredis'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import {
  MemoryStore,
  createLimiter,
  type Decision,
  type Limiter,
  type RuleInput,
} from '@floodgate/core'
import type { RequestFacts } from '@floodgate/core/http'
import { createRedisStore, createSyncedStore, redisKey, type RedisStore } from '@floodgate/redis'
import { hashTag } from '../src/redis-key.js'
import { RedisClusterFixture } from './helpers/redis-cluster.js'
import { recordingLogger } from './helpers/recording-logger.js'
import { redisBinariesAvailable, type RedisServer } from './helpers/redis-server.js'

// A slot being migrated (`redis-cli --cluster reshard`, or SETSLOT MIGRATING/IMPORTING and
// MIGRATE by hand) refuses a call of several keys its node does not hold all of: TRYAGAIN from
// the source when some are there and some not, from the target (after ASK) when any is missing.
// A client with state for one rule and none (yet, or no more) for another, or a new client,
// is such a call, for as long as the migration lasts. These tests migrate a slot on a cluster
// of their own, step by step, between decisions.

const binaries = redisBinariesAvailable()
if (!binaries && process.env.CI === 'true') throw new Error('redis-server is required under CI')

const facts = (ip: string): RequestFacts => ({ method: 'GET', path: '/', ip, headers: {} })

// Long enough that a busy machine meets it: a decision that fails open here is the defect.
const DEADLINE_MS = 2000

/** The Cluster slot of a hash tag (CRC16/XMODEM of it, modulo 16384). */
function slotOf(tag: string): number {
  let crc = 0
  for (const b of Buffer.from(tag)) {
    crc ^= b << 8
    for (let i = 0; i < 8; i++) crc = crc & 0x8000 ? ((crc << 1) ^ 0x1021) & 0xffff : crc << 1
  }
  return (crc & 0xffff) % 16384
}

/** `count` client IPs whose keys share one slot, the first `first`. */
function clientsInOneSlot(first: string, count: number): string[] {
  const slot = slotOf(hashTag(first))
  const out = [first]
  for (let i = 0; out.length < count && i < 1_000_000; i++) {
    const ip = `10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}`
    if (slotOf(hashTag(ip)) === slot) out.push(ip)
  }
  return out
}

const admin = (node: RedisServer): Redis => {
  const c = new Redis(node.port, '127.0.0.1', { maxRetriesPerRequest: 0 })
  c.on('error', () => {})
  return c
}

/** One slot's migration from the primary serving it to another, step by step. */
class SlotMigration {
  /**
   * Who serves each slot a migration here ended on: a node's CLUSTER SLOTS can lag the
   * SETSLOTs that just ended one.
   */
  private static readonly owners = new Map<number, RedisServer>()

  private constructor(
    private readonly cluster: RedisClusterFixture,
    readonly slot: number,
    private readonly source: Redis,
    private readonly target: Redis,
    private readonly targetNode: RedisServer,
    private readonly targetId: string,
  ) {}

  /** SETSLOT IMPORTING on the target, then MIGRATING on the source: nothing moved yet. */
  static async begin(cluster: RedisClusterFixture, slot: number): Promise<SlotMigration> {
    const from =
      SlotMigration.owners.get(slot) ?? (await cluster.primaryOf(slot, cluster.nodes[0]!))
    const to = cluster.nodes.find((n) => n !== from)!
    const [source, target] = [admin(from), admin(to)]
    const sourceId = await source.cluster('MYID')
    const targetId = await target.cluster('MYID')
    await target.cluster('SETSLOT', slot, 'IMPORTING', sourceId)
    await source.cluster('SETSLOT', slot, 'MIGRATING', targetId)
    return new SlotMigration(cluster, slot, source, target, to, targetId)
  }

  /** The keys of the slot still on the source. */
  private async left(): Promise<string[]> {
    return this.source.cluster('GETKEYSINSLOT', this.slot, 1000)
  }

  /** MIGRATE one key the source still holds (the `pick`th, round the list); false when none. */
  async moveOne(pick: number): Promise<boolean> {
    const keys = await this.left()
    if (keys.length === 0) return false
    await this.move([keys[pick % keys.length]!])
    return true
  }

  private async move(keys: string[]): Promise<void> {
    if (keys.length === 0) return
    await this.source.call(
      'MIGRATE',
      '127.0.0.1',
      String(this.targetNode.port),
      '',
      '0',
      '5000',
      'KEYS',
      ...keys,
    )
  }

  /** Move what is left and give the slot to the target on every node. */
  async end(): Promise<void> {
    await this.move(await this.left())
    await this.target.cluster('SETSLOT', this.slot, 'NODE', this.targetId)
    await this.source.cluster('SETSLOT', this.slot, 'NODE', this.targetId)
    for (const n of this.cluster.nodes) {
      const c = admin(n)
      await c.cluster('SETSLOT', this.slot, 'NODE', this.targetId)
      c.disconnect()
    }
    SlotMigration.owners.set(this.slot, this.targetNode)
    this.source.disconnect()
    this.target.disconnect()
  }
}

describe.skipIf(!binaries)('RedisStore while a Cluster slot is being migrated', () => {
  let cluster: RedisClusterFixture
  let run = 0

  beforeAll(async () => {
    cluster = await RedisClusterFixture.start({ primaries: 3 }).catch(() =>
      RedisClusterFixture.start({ primaries: 3 }),
    )
  }, 60_000)
  afterAll(async () => {
    await cluster?.stop()
  })

  function limiterOn(
    rules: RuleInput[],
    clock: () => number,
  ): {
    limiter: Limiter
    store: RedisStore
    prefix: string
    log: ReturnType<typeof recordingLogger>
  } {
    const prefix = `mig${++run}`
    const log = recordingLogger()
    const store = createRedisStore({
      cluster: cluster.seeds,
      prefix,
      timeSource: 'caller',
      callTimeoutMs: DEADLINE_MS,
      logger: log,
    })
    const limiter = createLimiter({
      rules,
      store,
      clock,
      logger: log,
      decisionTimeoutMs: DEADLINE_MS,
    })
    return { limiter, store, prefix, log }
  }

  it("keys the slot's nodes hold only in part: clients are still limited, none fails open", async () => {
    const now = 1_700_000_000_000
    const rules: RuleInput[] = [
      { id: 'fw', algorithm: 'fixed-window', limit: 3, window: '1h', key: ['ip'] },
      { id: 'conc', algorithm: 'concurrency', limit: 5, key: ['ip'] },
    ]
    const { limiter, store, prefix, log } = limiterOn(rules, () => now)
    const [old, fresh] = clientsInOneSlot('198.51.100.9', 2) as [string, string]
    try {
      await store.ready
      // The old client's window key exists; its concurrency key went with its last release.
      limiter.release(await limiter.check(facts(old)))
      const slot = slotOf(hashTag(old))
      expect(await admin(cluster.nodes[0]!).cluster('KEYSLOT', redisKey(prefix, old, 'x'))).toBe(
        slot,
      )
      const migration = await SlotMigration.begin(cluster, slot)
      const decide = async (ip: string, n: number): Promise<Decision[]> => {
        const out: Decision[] = []
        for (let i = 0; i < n; i++) out.push(await limiter.check(facts(ip)))
        return out
      }
      // Nothing moved: the source holds one of the old client's two keys, none of the new one's.
      const a = await decide(old, 3)
      const b = await decide(fresh, 2)
      // Half moved: the window key is on the target, the new client's keys are on the source.
      await migration.moveOne(0)
      const c = await decide(fresh, 2)
      const d = await decide(old, 1)
      await migration.end()
      const e = await decide(old, 1)
      const all = [...a, ...b, ...c, ...d, ...e]
      expect(all.filter((x) => x.failedOpen).length, 'decisions that failed open').toBe(0)
      expect(a.map((x) => x.allowed)).toEqual([true, true, false])
      expect(b.map((x) => x.allowed)).toEqual([true, true])
      expect(c.map((x) => x.allowed)).toEqual([true, false])
      expect([...d, ...e].map((x) => x.allowed)).toEqual([false, false])
      expect(log.lines).toEqual([])
    } finally {
      await limiter.close()
    }
  }, 60_000)

  it('through random migrations, every decision is the one a MemoryStore makes, never failed open (property)', async () => {
    const rules: RuleInput[] = [
      { id: 'tb', algorithm: 'token-bucket', limit: 4, window: '1m', key: ['ip'] },
      { id: 'fw', algorithm: 'fixed-window', limit: 3, window: '1h', key: ['ip'] },
      { id: 'conc', algorithm: 'concurrency', limit: 2, key: ['ip'] },
    ]
    // Three clients whose keys share one slot: one call can batch requests of several.
    const clients = clientsInOneSlot('192.0.2.44', 3)
    const slot = slotOf(hashTag(clients[0]!))
    type Op =
      | { kind: 'check'; client: number; together: number }
      | { kind: 'release'; pick: number }
      | { kind: 'advance'; ms: number }
      | { kind: 'begin' }
      | { kind: 'move'; pick: number }
      | { kind: 'end' }
    const op: fc.Arbitrary<Op> = fc.oneof(
      {
        weight: 6,
        arbitrary: fc.record({
          kind: fc.constant('check' as const),
          client: fc.nat(clients.length - 1),
          // Requests started together share script calls (one batch per key or tag).
          together: fc.integer({ min: 1, max: 3 }),
        }),
      },
      {
        weight: 3,
        arbitrary: fc.record({ kind: fc.constant('release' as const), pick: fc.nat() }),
      },
      {
        weight: 1,
        arbitrary: fc.record({
          kind: fc.constant('advance' as const),
          ms: fc.integer({ min: 1, max: 30_000 }),
        }),
      },
      { weight: 2, arbitrary: fc.constant({ kind: 'begin' as const }) },
      { weight: 3, arbitrary: fc.record({ kind: fc.constant('move' as const), pick: fc.nat() }) },
      { weight: 1, arbitrary: fc.constant({ kind: 'end' as const }) },
    )
    await fc.assert(
      fc.asyncProperty(fc.array(op, { minLength: 5, maxLength: 30, size: 'max' }), async (ops) => {
        let now = 1_700_000_000_000
        const clock = (): number => now
        const { limiter, store, log } = limiterOn(rules, clock)
        const model = createLimiter({ rules, store: new MemoryStore(), clock })
        let migration: SlotMigration | undefined
        const held: [Decision, Decision][] = []
        try {
          await store.ready
          for (const [step, o] of ops.entries()) {
            if (o.kind === 'check') {
              const ip = clients[o.client]!
              const got = await Promise.all(
                Array.from({ length: o.together }, async () => limiter.check(facts(ip))),
              )
              for (const d of got) {
                const want = model.check(facts(ip)) as Decision
                expect(d.failedOpen, `step ${step}: failed open`).toBe(false)
                expect(d.allowed, `step ${step}: ${JSON.stringify(o)}`).toBe(want.allowed)
                if (d.allowed) {
                  expect(d.remaining, `step ${step}: remaining`).toBe(want.remaining)
                  held.push([d, want])
                }
              }
            } else if (o.kind === 'release') {
              if (held.length === 0) continue
              const [d, want] = held.splice(o.pick % held.length, 1)[0]!
              limiter.release(d)
              model.release(want)
              // The release reaches Redis before the next decision.
              await new Promise((r) => setTimeout(r, 20))
            } else if (o.kind === 'advance') now += o.ms
            else if (o.kind === 'begin') migration ??= await SlotMigration.begin(cluster, slot)
            else if (o.kind === 'move') await migration?.moveOne(o.pick)
            else {
              await migration?.end()
              migration = undefined
            }
          }
          expect(log.lines).toEqual([])
        } finally {
          await migration?.end()
          await limiter.close()
        }
      }),
      { numRuns: 15 },
    )
  }, 240_000)

  it('SyncedStore: no sync fails while a slot migrates, and every unit reaches the fleet once (property)', async () => {
    const rules: RuleInput[] = [
      { id: 'a', algorithm: 'token-bucket', limit: 6, window: '1h', key: ['ip'] },
      { id: 'b', algorithm: 'gcra', limit: 9, window: '1h', key: ['ip'] },
    ]
    const clients = clientsInOneSlot('192.0.2.45', 2)
    const slot = slotOf(hashTag(clients[0]!))
    type Op =
      | { kind: 'check'; host: number; client: number }
      | { kind: 'sync'; host: number }
      | { kind: 'begin' }
      | { kind: 'move'; pick: number }
      | { kind: 'end' }
    const host = fc.nat(1)
    const op: fc.Arbitrary<Op> = fc.oneof(
      {
        weight: 5,
        arbitrary: fc.record({
          kind: fc.constant('check' as const),
          host,
          client: fc.nat(clients.length - 1),
        }),
      },
      { weight: 4, arbitrary: fc.record({ kind: fc.constant('sync' as const), host }) },
      { weight: 2, arbitrary: fc.constant({ kind: 'begin' as const }) },
      { weight: 3, arbitrary: fc.record({ kind: fc.constant('move' as const), pick: fc.nat() }) },
      { weight: 1, arbitrary: fc.constant({ kind: 'end' as const }) },
    )
    await fc.assert(
      fc.asyncProperty(fc.array(op, { minLength: 5, maxLength: 30, size: 'max' }), async (ops) => {
        const now = 1_700_000_000_000
        const clock = (): number => now
        const prefix = `migs${++run}`
        const log = recordingLogger()
        // Syncs only when the test says (and early ones the store starts itself).
        const stores = [0, 1].map(() =>
          createSyncedStore({
            cluster: cluster.seeds,
            prefix,
            syncMs: 3_600_000,
            syncTimeoutMs: DEADLINE_MS,
            clock,
            logger: log,
          }),
        )
        const limiters = stores.map((store) => createLimiter({ rules, store, clock, logger: log }))
        const admitted = clients.map(() => 0)
        let migration: SlotMigration | undefined
        try {
          await Promise.all(stores.map((s) => s.ready))
          for (const [step, o] of ops.entries()) {
            if (o.kind === 'check') {
              const d = await limiters[o.host]!.check(facts(clients[o.client]!))
              if (d.allowed) admitted[o.client]!++
            } else if (o.kind === 'sync') {
              // An early round the store started itself (a burst on a new key) may still be in
              // flight: a round then sends nothing and counts as failed, migration or not.
              await new Promise((r) => setTimeout(r, 50))
              await stores[o.host]!.syncNow()
            } else if (o.kind === 'begin') migration ??= await SlotMigration.begin(cluster, slot)
            else if (o.kind === 'move') await migration?.moveOne(o.pick)
            else {
              await migration?.end()
              migration = undefined
            }
            expect(
              stores.map((s) => s.failedSyncs),
              `step ${step}: ${JSON.stringify(o)}: ${log.lines.join('; ')}`,
            ).toEqual([0, 0])
          }
          // Everything each host admitted reaches the fleet counters, once, migration or not.
          await new Promise((r) => setTimeout(r, 50))
          for (const s of stores) await s.syncNow()
          for (const s of stores) await s.syncNow()
          expect(stores.map((s) => s.failedSyncs)).toEqual([0, 0])
          // Read once every key is on one node.
          await migration?.end()
          migration = undefined
          // Each node's keys of the slot, read from the node itself (one node's view of who
          // owns the slot can lag the SETSLOTs that just ended the migration).
          const totals = new Map<string, number>()
          for (const n of cluster.nodes) {
            const c = admin(n)
            for (const k of await c.cluster('GETKEYSINSLOT', slot, 1000)) {
              if (k.startsWith(`${prefix}:`)) totals.set(k, Number(await c.hget(k, 't')))
            }
            c.disconnect()
          }
          for (const [c, ip] of clients.entries()) {
            for (const rule of ['a', 'b']) {
              const start = `${redisKey(prefix, ip, '')}${rule}|`
              const found = [...totals].filter(([k]) => k.startsWith(start))
              expect(found.length, `${ip} rule ${rule}: keys`).toBeLessThanOrEqual(1)
              expect(found[0]?.[1] ?? 0, `${ip} rule ${rule}`).toBe(admitted[c])
            }
          }
          expect(log.lines).toEqual([])
        } finally {
          await migration?.end()
          await Promise.all(limiters.map((l) => l.close()))
        }
      }),
      { numRuns: 10 },
    )
  }, 300_000)
})
