import fc from 'fast-check'
import { Redis } from 'ioredis'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { ConsumeEntry } from '@floodgate/core/algorithms'
import { testRule } from '@floodgate/core/testing'
import { createSyncedStore, type SyncedStore } from '@floodgate/redis'
import { hashTag } from '../src/redis-key.js'
import { eventually } from './helpers/eventually.js'
import { recordingLogger } from './helpers/recording-logger.js'
import { RedisServer, redisBinariesAvailable } from './helpers/redis-server.js'

// Several hosts in one process on a Redis that is killed (SIGKILL, mid-sync or between rounds)
// and restarted from its append-only file, that hangs (SIGSTOP) past the sync deadline, or that
// loses one fleet counter (evicted). Against a simple model, one shared bucket per key: what the
// fleet counter holds at the end was admitted (no unit counted twice across a reconnect or a
// late reply), and every unit admitted since the counter was last lost is in it, unless a host
// logged it as unsent at close. Decisions never fail, and each host logs at most one line per 10 s of outage.

const binaries = redisBinariesAvailable()
if (!binaries && process.env.CI === 'true') throw new Error('redis-server is required under CI')

const HOSTS = 5
const KEYS = 3
const rule = testRule('token-bucket', 1_000_000, 60_000)

type Step =
  | { kind: 'consume'; host: number; key: number; cost: number }
  | { kind: 'sync'; host: number; wait: boolean }
  | { kind: 'crash'; downFor: number }
  | { kind: 'freeze'; host: number; ms: number }
  | { kind: 'evict'; key: number }
  | { kind: 'close'; host: number }
  | { kind: 'pause'; ms: number }

const host = fc.integer({ min: 0, max: HOSTS - 1 })
const step: fc.Arbitrary<Step> = fc.oneof(
  {
    weight: 6,
    arbitrary: fc.record({
      kind: fc.constant('consume' as const),
      host,
      key: fc.integer({ min: 0, max: KEYS - 1 }),
      cost: fc.integer({ min: 1, max: 3 }),
    }),
  },
  {
    weight: 4,
    arbitrary: fc.record({ kind: fc.constant('sync' as const), host, wait: fc.boolean() }),
  },
  {
    weight: 1,
    arbitrary: fc.record({ kind: fc.constant('crash' as const), downFor: fc.constantFrom(0, 30) }),
  },
  {
    weight: 1,
    arbitrary: fc.record({
      kind: fc.constant('freeze' as const),
      host,
      ms: fc.constantFrom(50, 300),
    }),
  },
  {
    weight: 1,
    arbitrary: fc.record({
      kind: fc.constant('evict' as const),
      key: fc.integer({ min: 0, max: KEYS - 1 }),
    }),
  },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('close' as const), host }) },
  {
    weight: 1,
    arbitrary: fc.record({ kind: fc.constant('pause' as const), ms: fc.constantFrom(1, 20) }),
  },
)

const name = (k: number): string => `k${k}`
const counterOf = (prefix: string, k: number): string =>
  `${prefix}:{${hashTag(name(k))}}:${rule.stateId}:synced`
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms))

describe.skipIf(!binaries)('SyncedStore: Redis killed and restarted empty (property)', () => {
  let server: RedisServer
  let admin: Redis

  beforeAll(async () => {
    // Every write on disk before it is answered: a crash loses no applied batch, so a batch
    // whose reply the crash cut off is in Redis when the host sends it again.
    server = await RedisServer.start(['--appendonly', 'yes', '--appendfsync', 'always'])
    admin = new Redis(server.port, '127.0.0.1', { maxRetriesPerRequest: 1 })
    admin.on('error', () => {})
  })
  afterAll(async () => {
    admin.disconnect()
    await server.stop()
  })

  let run = 0
  it('counts each unit at most once, loses none admitted since the last crash', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(step, { minLength: 1, maxLength: 30 }), async (steps) => {
        const prefix = `fgcrash${++run}`
        const now = 1_000_000
        const loggers = Array.from({ length: HOSTS }, () => recordingLogger())
        // What a host's close() said it could not send.
        let gaveUp = 0
        const stores: SyncedStore[] = loggers.map((logger) =>
          createSyncedStore({
            url: server.url,
            prefix,
            syncMs: 600_000,
            syncTimeoutMs: 200,
            clock: () => now,
            logger: {
              ...logger,
              warn: (obj: { unsent?: number; unconfirmed?: number }, msg?: string) => {
                gaveUp += (obj.unsent ?? 0) + (obj.unconfirmed ?? 0)
                logger.warn(obj, msg)
              },
            },
          }),
        )
        const started = Date.now()
        await Promise.all(stores.map((s) => s.ready))
        const admitted = Array.from({ length: KEYS }, () => 0)
        const sinceLoss = Array.from({ length: KEYS }, () => 0)
        const closed = stores.map(() => false)
        const pending: Promise<void>[] = []
        try {
          for (const s of steps) {
            switch (s.kind) {
              case 'consume': {
                if (closed[s.host]) break
                const e: ConsumeEntry = {
                  rule,
                  key: name(s.key),
                  cost: s.cost,
                  maxWaitMs: 0,
                  shadow: false,
                }
                if (stores[s.host]!.consume([e], now)[0]!.allowed) {
                  admitted[s.key]! += s.cost
                  sinceLoss[s.key]! += s.cost
                }
                break
              }
              case 'sync': {
                const round = stores[s.host]!.syncNow()
                if (s.wait) await round
                else pending.push(round)
                break
              }
              case 'crash':
                // Comes back with every write it answered (and maybe the one it was applying).
                await server.kill()
                if (s.downFor > 0) await sleep(s.downFor)
                await server.start()
                break
              case 'freeze': {
                // Redis hangs: a round sent now misses its deadline (syncTimeoutMs 200) and is
                // applied once Redis resumes; its reply comes too late, so it is sent again.
                server.signal('SIGSTOP')
                pending.push(stores[s.host]!.syncNow())
                await sleep(s.ms)
                server.signal('SIGCONT')
                break
              }
              case 'evict':
                // One fleet counter gone (evicted under maxmemory, deleted): as a crash, for it.
                await admin.del(counterOf(prefix, s.key))
                sinceLoss[s.key] = 0
                break
              case 'close':
                closed[s.host] = true
                pending.push(stores[s.host]!.close())
                break
              case 'pause':
                await sleep(s.ms)
                break
            }
          }
          await eventually(() =>
            Promise.resolve(stores.every((s, i) => closed[i] || s.client.status === 'ready')),
          )
          await Promise.all(pending)
          await Promise.all(stores.map((s) => s.close()))
          for (let k = 0; k < KEYS; k++) {
            const total = Number((await admin.hget(counterOf(prefix, k), 't')) ?? 0)
            expect(total, `key ${k}`).toBeLessThanOrEqual(admitted[k]!)
            expect(total, `key ${k}`).toBeGreaterThanOrEqual(sinceLoss[k]! - gaveUp)
          }
          const seconds = (Date.now() - started) / 1000
          for (const l of loggers) {
            const throttled = l.lines.filter((x) => !/closed before|while the connection/.test(x))
            expect(throttled.length).toBeLessThanOrEqual(1 + Math.floor(seconds / 10))
          }
        } finally {
          await Promise.all(stores.map((s) => s.close()))
        }
      }),
      { numRuns: 30 },
    )
  }, 300_000)
})
