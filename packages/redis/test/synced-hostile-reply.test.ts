import fc from 'fast-check'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { ConsumeEntry } from '@floodgate/core/algorithms'
import { testRule } from '@floodgate/core/testing'
import { createSyncedStore, type SyncedStore } from '@floodgate/redis'
import { ScriptedRespServer, bulk } from './helpers/scripted-resp-server.js'

const rule = testRule('token-bucket', 5, 60_000)
const one = (cost = 1): ConsumeEntry[] => [{ rule, key: 'k', cost, maxWaitMs: 0, shadow: false }]

/** The sync script's answer for one key: fleet total, units in use, hosts. */
const levels = (total: number, used: number, hosts: number): Buffer =>
  Buffer.concat([
    Buffer.from('*3\r\n'),
    bulk(String(total)),
    bulk(String(used)),
    bulk(String(hosts)),
  ])

/** Whether three strings would read as a level (then the reply is the script's, not garbage). */
const readsAsLevel = (ss: string[]): boolean =>
  ss.length === 3 &&
  Number.isFinite(Number(ss[1])) &&
  Number.isInteger(Number(ss[2])) &&
  Number(ss[2]) >= 1

/** Sync replies that are not the script's answer for one key. */
const arbGarbage: fc.Arbitrary<Buffer> = fc.oneof(
  fc.uint8Array({ maxLength: 40 }).map((b) => bulk(Buffer.from(b))),
  fc.integer().map((n) => Buffer.from(`:${n}\r\n`)),
  fc
    .array(
      fc.oneof(fc.string({ maxLength: 12 }), fc.constantFrom('NaN', 'inf', '-1', '0', '1.5', '')),
      {
        maxLength: 6,
      },
    )
    .filter((ss) => !readsAsLevel(ss))
    .map((ss) => Buffer.concat([Buffer.from(`*${ss.length}\r\n`), ...ss.map((x) => bulk(x))])),
  fc.constantFrom(
    Buffer.from('$-1\r\n'),
    Buffer.from('*-1\r\n'),
    Buffer.from('+OK\r\n'),
    Buffer.from('*3\r\n:5\r\n:5\r\n:0\r\n'),
    levels(5, Number.NaN, 1),
    levels(5, 0, 0),
  ),
)

describe('SyncedStore against a server that answers its sync with anything', () => {
  let server: ScriptedRespServer
  let store: SyncedStore
  let next: Buffer = levels(0, 0, 1)
  let lastArgs: string[] = []
  const now = 1_000_000
  const warnings: unknown[] = []

  beforeAll(async () => {
    server = await ScriptedRespServer.start((args) => {
      lastArgs = args
      return next
    })
    store = createSyncedStore({
      url: server.url,
      prefix: 'fghostile',
      syncMs: 600_000,
      clock: () => now,
      logger: {
        warn: (o: unknown) => warnings.push(o),
        error: () => {},
        info: () => {},
        debug: () => {},
      },
    })
    await store.ready
  })
  afterAll(async () => {
    await store.close()
    await server.stop()
  })

  it('keeps its local bucket and the units it admitted when a sync answer is garbage, and sends them again (property)', async () => {
    // Learn the fleet level (empty), then spend the whole burst here.
    store.consume(one(0), now)
    await store.syncNow()
    for (let i = 0; i < 5; i++) expect(store.consume(one(), now)[0]!.allowed).toBe(true)
    expect(store.consume(one(), now)[0]!.allowed).toBe(false)

    await fc.assert(
      fc.asyncProperty(arbGarbage, async (reply) => {
        next = reply
        const failed = store.failedSyncs
        await store.syncNow()
        expect(store.failedSyncs).toBe(failed + 1)
        // Nothing learnt from it: the burst spent here is still spent.
        expect(store.consume(one(), now)[0]!.allowed).toBe(false)
      }),
      { numRuns: 100 },
    )
    expect(JSON.stringify(warnings)).toContain('FG_ERR_STORE_ANSWER_INVALID')

    // Redis answers again: the 5 units admitted here are sent (they were never acknowledged).
    next = levels(5, 5, 1)
    await store.syncNow()
    const n = Number(lastArgs[lastArgs.length - 3])
    expect(n).toBe(1)
    expect(Number(lastArgs[lastArgs.length - 1])).toBe(5)
  })
})
