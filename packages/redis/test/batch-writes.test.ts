import fc from 'fast-check'
import { Redis } from 'ioredis'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import {
  STATE_TIME_HORIZON_MS,
  type AlgorithmName,
  type ConsumeEntry,
} from '@floodgate/core/algorithms'
import { testRule } from '@floodgate/core/testing'
import { createRedisStore } from '@floodgate/redis'
import { decideScript, scriptAlgorithms } from '../src/scripts/decide-script.js'
import {
  ENTRY_BYTES,
  ENTRY_OFFSET,
  MAX_REPEATS,
  REQUEST_HEADER_BYTES,
  decodeBatch,
  encodeBatch,
  repeatsRequest,
  requestBytes,
  type WireMode,
  type WireRequest,
} from '../src/wire-format.js'
import { adminConnection, redisAvailable, uniquePrefix } from './helpers/redis.js'
import { RedisServer, redisBinariesAvailable } from './helpers/redis-server.js'

// The general script reads every key of a batch with one MGET and writes each key it changed
// once, at the end of the call. Redis runs a script atomically, so that must answer, store and
// expire exactly what the same requests store when each is a call of its own.

const available = await redisAvailable()
const binaries = redisBinariesAvailable()
const prefix = uniquePrefix('batch-writes')

/** A script call's ARGV for `packed` decided at `at` (ms), with 60 s of TTL slack each way. */
const argv = (at: number, packed: Buffer): (string | Buffer)[] => [
  String(at),
  '60000',
  '60000',
  packed,
]

/** Whether `keys` all differ: RedisStore then marks its call so (see `encodeRequests`). */
const differ = (keys: readonly string[]): boolean => new Set(keys).size === keys.length

/**
 * Key `b` holds what key `a` holds: the same type, the same bytes for a string, and the same TTL
 * up to the time since `writingFrom` (-1: no TTL, a hash never written; -2: no key).
 */
async function expectSameKey(
  redis: Redis,
  b: string,
  a: string,
  name: string,
  writingFrom: number,
): Promise<void> {
  const [tb, ta] = [await redis.pttl(b), await redis.pttl(a)]
  const type = await redis.type(a)
  expect(await redis.type(b), `type of ${name}`).toBe(type)
  if (type === 'string') {
    expect(await redis.getBuffer(b), `value of ${name}`).toEqual(await redis.getBuffer(a))
  }
  // Else the same up to the time between the writes and the reads (a few ms, more on a loaded
  // machine).
  const elapsed = Date.now() - writingFrom
  if (ta < 0) expect(tb, `ttl of ${name}`).toBe(ta)
  else expect(Math.abs(ta - tb), `ttl of ${name}: ${ta} ${tb}`).toBeLessThanOrEqual(elapsed + 2)
}

/** Calls of each command Redis ran, scripts' inner commands included. */
async function commandCalls(redis: Redis): Promise<Record<string, number>> {
  const info = await redis.info('commandstats')
  const calls: Record<string, number> = {}
  for (const m of info.matchAll(/^cmdstat_([^:]+):calls=(\d+)/gm)) calls[m[1]!] = Number(m[2])
  return calls
}

describe.skipIf(!binaries && process.env.CI !== 'true')('a batch in Redis', () => {
  let server: RedisServer
  let admin: Redis
  beforeAll(async () => {
    server = await RedisServer.start()
    admin = new Redis(server.port, '127.0.0.1')
  })
  afterAll(async () => {
    admin?.disconnect()
    await server?.stop()
  })

  it('reads its keys with one MGET and writes a key several requests touch once', async () => {
    const store = createRedisStore({ url: server.url, prefix: 'bw', timeSource: 'caller' })
    const rule = testRule('token-bucket', 100, 1000)
    const entry = (key: string): ConsumeEntry[] => [
      { rule, key, cost: 1, maxWaitMs: 0, shadow: false },
    ]
    try {
      await store.ready
      await store.consume(entry('warm'), 0)
      await admin.config('RESETSTAT')
      // The first leaves alone (the lone script: GET, SET); the other 16 share one call:
      // 8 on one key, 8 on keys of their own.
      const keys = [
        'opener',
        ...Array(8).fill('hot'),
        ...Array.from({ length: 8 }, (_, i) => `k${i}`),
      ]
      const results = await Promise.all(keys.map((k) => store.consume(entry(k), 0)))
      expect(results.map(([r]) => r!.remaining)).toEqual([
        99,
        ...Array.from({ length: 8 }, (_, i) => 99 - i),
        ...Array(8).fill(99),
      ])
      const calls = await commandCalls(admin)
      // A state is written with SET … PX or PSETEX: the same write.
      const writes = (calls.set ?? 0) + (calls.psetex ?? 0)
      expect({ get: calls.get, mget: calls.mget, writes }).toEqual({
        get: 1,
        mget: 1,
        writes: 1 + 1 + 8,
      })
    } finally {
      await store.close()
    }
  })
})

/** A request as the property draws it. */
interface Drawn {
  mode: WireMode
  entries: { key: number; alg: number; cost: number; maxWaitMs: number; shadow: boolean }[]
}

describe.skipIf(!available)('the general script, a batch against one call per request', () => {
  const redis = adminConnection(prefix)

  // Every mode, keys shared between requests and within one, states of any kind beforehand
  // (none, Floodgate's, a string of the wrong size, a hash): the batch's reply, every key's
  // value and its TTL must be what the requests give one call each, in order, at the same now.
  it('answers, stores and expires exactly what the requests do one call each', async () => {
    const algorithms: AlgorithmName[][] = [
      ['token-bucket'],
      ['gcra'],
      ['fixed-window', 'token-bucket'],
      ['concurrency', 'sliding-window-log'],
      ['leaky-bucket', 'sliding-window-counter'],
    ]
    let n = 0
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom(...algorithms),
        fc.integer({ min: 1, max: 6 }),
        fc.array(
          fc.constantFrom<'none' | 'short' | 'hash' | 'used'>('none', 'short', 'hash', 'used'),
          {
            minLength: 3,
            maxLength: 3,
          },
        ),
        fc.array(
          fc.record({
            mode: fc.constantFrom<WireMode>('c', 'c', 'c', 'r', 'p', 'x', 'f'),
            entries: fc.array(
              fc.record({
                key: fc.integer({ min: 0, max: 2 }),
                alg: fc.nat(),
                cost: fc.constantFrom(1, 1, 2, 0, 0.5),
                maxWaitMs: fc.constantFrom(0, 0, 300),
                shadow: fc.boolean(),
              }),
              { minLength: 1, maxLength: 3 },
            ),
          }),
          { minLength: 1, maxLength: 20 },
        ),
        async (names, limit, starts, drawn: Drawn[]) => {
          const sorted = scriptAlgorithms(names)
          const lua = decideScript(sorted)
          const rules = sorted.map((a) => testRule(a, limit, 1000))
          const run = ++n
          // A client key and a rule make a Redis key, as in the store (a rule's own stateId).
          const keyOf = (side: string, key: number, rule: number): string =>
            `${prefix}:${run}:${side}:${key}:${rule}`
          // Penalize is for the token bucket and GCRA only.
          const penalizes = (a: AlgorithmName): boolean => a === 'token-bucket' || a === 'gcra'
          const requests = drawn.map((d) => {
            const entries = d.entries.map((e) => ({ ...e, rule: rules[e.alg % rules.length]! }))
            const mode =
              d.mode === 'f' && !entries.every((e) => penalizes(e.rule.algorithm.name))
                ? 'c'
                : d.mode
            return {
              request: {
                mode,
                entries: entries.map((e, i) => ({
                  rule: e.rule,
                  key: String(e.key),
                  cost: e.cost,
                  maxWaitMs: e.maxWaitMs,
                  shadow: e.shadow,
                  lease: i + 1,
                })),
              } satisfies WireRequest,
              keys: entries.map((e) => [e.key, e.alg % rules.length] as const),
            }
          })
          const now = 1_763_000_000_000
          // The TTLs are read some time after each write, from here on: they may differ by
          // that much (a key the requests leave alone keeps the TTL its start gave it).
          const writingFrom = Date.now()
          // Each side's keys start alike.
          for (const side of ['batch', 'alone']) {
            for (const [key, start] of starts.entries()) {
              for (const [i, rule] of rules.entries()) {
                const k = keyOf(side, key, i)
                if (start === 'short') await redis.admin.set(k, 'xyz')
                if (start === 'hash') await redis.admin.hset(k, 'f', '1')
                if (start === 'used') {
                  const e = { rule, key: String(key), cost: 1, maxWaitMs: 0, shadow: false }
                  const packed = encodeBatch([{ mode: 'c', entries: [e] }], sorted)
                  await redis.admin.callBuffer('EVAL', lua, 1, k, ...argv(now - 100, packed))
                }
              }
            }
          }
          const batchKeys = requests.flatMap((r) =>
            r.keys.map(([key, i]) => keyOf('batch', key, i)),
          )
          const batchReply = (await redis.admin.callBuffer(
            'EVAL',
            lua,
            batchKeys.length,
            ...batchKeys,
            ...argv(
              now,
              encodeBatch(
                requests.map((r) => r.request),
                sorted,
                differ(batchKeys),
              ),
            ),
          )) as Buffer
          const aloneReplies: Buffer[] = []
          for (const r of requests) {
            const keys = r.keys.map(([key, i]) => keyOf('alone', key, i))
            aloneReplies.push(
              (await redis.admin.callBuffer(
                'EVAL',
                lua,
                keys.length,
                ...keys,
                // The reference: unmarked, the path that keeps a table of first places.
                ...argv(now, encodeBatch([r.request], sorted)),
              )) as Buffer,
            )
          }
          expect(batchReply).toEqual(Buffer.concat(aloneReplies))
          for (let key = 0; key < 3; key++) {
            for (let i = 0; i < rules.length; i++) {
              await expectSameKey(
                redis.admin,
                keyOf('batch', key, i),
                keyOf('alone', key, i),
                String(key),
                writingFrom,
              )
            }
          }
        },
      ),
      { numRuns: Number(process.env.FG_RUNS ?? 30) },
    )
    // Hundreds of round trips: not about a deadline, and slow on a loaded machine.
  }, 120_000)
})

/** How a key starts in the fast path's property. */
type Start =
  'none' | 'used' | 'near' | 'ahead' | 'short' | 'size' | 'nan' | 'negative' | 'infinite' | 'hash'

describe.skipIf(!available)('the general script of one inlined algorithm, its fast path', () => {
  // Every key the property writes is under the prefix the connection deletes afterwards.
  const fastPrefix = uniquePrefix('batch-inline')
  const redis = adminConnection(fastPrefix)

  // A one-algorithm script of an inlined algorithm runs a one-rule consume with the
  // algorithm's Lua inline, its state in locals; a script whose algorithms are all inlined
  // runs a consume of several entries on distinct keys inline too. Against the table path (the
  // same algorithms in a script with one more, which has no inline path), one call per
  // request: the same reply, stored bytes and TTLs, in batches mixing such consumes with every
  // other mode, several entries per request, repeated keys, full queues, shadow entries, keys
  // holding what Floodgate did not write or dated past the clock-step horizon, and entries
  // whose state size is not their algorithm's (a client of another version: the inline path
  // leaves such a request to the table path, after starting on it).
  const INLINED: AlgorithmName[] = [
    'token-bucket',
    'gcra',
    'fixed-window',
    'leaky-bucket',
    'sliding-window-counter',
  ]
  const SCRIPTS: AlgorithmName[][] = [
    ...INLINED.map((a) => [a]),
    ['fixed-window', 'token-bucket'],
    ['gcra', 'sliding-window-counter'],
  ]
  for (const names of SCRIPTS) {
    it(`answers, stores and expires what the table path does: ${names.join(' + ')}`, async () => {
      const algorithms = scriptAlgorithms(names)
      const fast = decideScript(algorithms)
      const tableNames = scriptAlgorithms([...algorithms, 'sliding-window-log'])
      const table = decideScript(tableNames)
      const sizeOf = (a: AlgorithmName): number => (a === 'sliding-window-counter' ? 3 : 2)
      const penalizes = (a: AlgorithmName): boolean => a === 'token-bucket' || a === 'gcra'
      let n = 0
      await fc.assert(
        fc.asyncProperty(
          fc.integer({ min: 1, max: 6 }),
          fc.constantFrom(100, 1000, 60_000),
          fc.array(
            fc.constantFrom<Start>(
              'none',
              'used',
              'near',
              'ahead',
              'short',
              'size',
              'nan',
              'negative',
              'infinite',
              'hash',
            ),
            { minLength: 3, maxLength: 3 },
          ),
          fc.array(
            fc.record({
              mode: fc.constantFrom<WireMode>('c', 'c', 'c', 'c', 'c', 'r', 'p', 'x', 'f'),
              entries: fc.array(
                fc.record({
                  key: fc.integer({ min: 0, max: 2 }),
                  alg: fc.nat(),
                  cost: fc.constantFrom(1, 1, 2, 0, 0.5),
                  maxWaitMs: fc.constantFrom(0, 0, 300),
                  shadow: fc.boolean(),
                  queueFull: fc.boolean(),
                }),
                { minLength: 1, maxLength: 3 },
              ),
              // The last entry's state size one more than its algorithm's.
              foreignSize: fc.constantFrom(false, false, false, false, false, false, true),
            }),
            { minLength: 1, maxLength: 20 },
          ),
          async (limit, windowMs, starts, drawn) => {
            const rules = algorithms.map((a) => testRule(a, limit, windowMs))
            const run = ++n
            // A client key and a rule make a Redis key, as in the store.
            const keyOf = (side: string, key: number, rule: number): string =>
              `${fastPrefix}:${algorithms.join('+')}:${run}:${side}:${key}:${rule}`
            const requests = drawn.map((d) => {
              const entries = d.entries.map((e, i) => ({
                ...e,
                ruleIndex: e.alg % rules.length,
                rule: rules[e.alg % rules.length]!,
                key: String(e.key),
                lease: i + 1,
              }))
              const charges = entries.every((e) => penalizes(e.rule.algorithm.name))
              return {
                mode: d.mode === 'f' && !charges ? ('c' as const) : d.mode,
                entries,
                foreignSize: d.foreignSize,
              }
            })
            // Sets the last entry's state size of each foreign-size request in `packed` (the
            // requests `rs`, packed in order).
            const withForeignSizes = (packed: Buffer, rs: typeof requests): Buffer => {
              let at = 0
              for (const r of rs) {
                const last = r.entries.length - 1
                if (r.foreignSize) {
                  const size = sizeOf(r.entries[last]!.rule.algorithm.name) + 1
                  const o = at + REQUEST_HEADER_BYTES + last * ENTRY_BYTES + ENTRY_OFFSET.size
                  packed.writeDoubleLE(size, o)
                }
                at += requestBytes(r.entries.length)
              }
              return packed
            }
            const now = 1_763_000_000_000
            const doubles = (values: number[]): Buffer => {
              const b = Buffer.alloc(values.length * 8)
              values.forEach((v, i) => b.writeDoubleLE(v, i * 8))
              return b
            }
            const writingFrom = Date.now()
            for (const side of ['batch', 'alone']) {
              for (const [key, start] of starts.entries()) {
                for (const [ri, rule] of rules.entries()) {
                  const k = keyOf(side, key, ri)
                  const size = sizeOf(rule.algorithm.name)
                  const valid = Array.from({ length: size }, () => now - 50)
                  if (start === 'short') await redis.admin.set(k, 'xyz')
                  if (start === 'size') await redis.admin.set(k, doubles([...valid, 1]))
                  if (start === 'nan')
                    await redis.admin.set(k, doubles([Number.NaN, ...valid.slice(1)]))
                  if (start === 'negative')
                    await redis.admin.set(k, doubles([...valid.slice(1), -1]))
                  if (start === 'infinite') {
                    await redis.admin.set(k, doubles([...valid.slice(1), Number.POSITIVE_INFINITY]))
                  }
                  if (start === 'hash') await redis.admin.hset(k, 'f', '1')
                  if (start === 'used' || start === 'near' || start === 'ahead') {
                    // A state Floodgate wrote: before now, within the horizon ahead, past it.
                    const at = {
                      used: now - 100,
                      near: now + STATE_TIME_HORIZON_MS / 2,
                      ahead: now + STATE_TIME_HORIZON_MS + 500,
                    }[start]
                    const e = { rule, key: String(key), cost: 1, maxWaitMs: 0, shadow: false }
                    const packed = encodeBatch([{ mode: 'c', entries: [e] }], tableNames)
                    await redis.admin.callBuffer('EVAL', table, 1, k, ...argv(at, packed))
                  }
                }
              }
            }
            const keysOf = (side: string, rs: typeof requests): string[] =>
              rs.flatMap((r) => r.entries.map((e) => keyOf(side, Number(e.key), e.ruleIndex)))
            const batchKeys = keysOf('batch', requests)
            const batchReply = (await redis.admin.callBuffer(
              'EVAL',
              fast,
              batchKeys.length,
              ...batchKeys,
              ...argv(
                now,
                withForeignSizes(encodeBatch(requests, algorithms, differ(batchKeys)), requests),
              ),
            )) as Buffer
            const aloneReplies: Buffer[] = []
            for (const r of requests) {
              const keys = keysOf('alone', [r])
              aloneReplies.push(
                (await redis.admin.callBuffer(
                  'EVAL',
                  table,
                  keys.length,
                  ...keys,
                  // The reference: unmarked, the path that keeps a table of first places.
                  ...argv(now, withForeignSizes(encodeBatch([r], tableNames), [r])),
                )) as Buffer,
              )
            }
            expect(batchReply).toEqual(Buffer.concat(aloneReplies))
            for (let key = 0; key < 3; key++) {
              for (let ri = 0; ri < rules.length; ri++) {
                const [b, a] = [keyOf('batch', key, ri), keyOf('alone', key, ri)]
                await expectSameKey(redis.admin, b, a, `${key}:${ri}`, writingFrom)
              }
            }
          },
        ),
        { numRuns: Number(process.env.FG_RUNS ?? 40) },
      )
    }, 120_000)
  }
})

describe.skipIf(!available)('a batch whose requests repeat the one before them', () => {
  const repeatPrefix = uniquePrefix('batch-repeats')
  const redis = adminConnection(repeatPrefix)

  // A consume of one entry whose packed bytes repeat the request before it (one rule's
  // requests, but for the key) is sent as a count in that request's mode byte, and the script
  // decides it with that request's numbers and its own key. Against the same batch sent in
  // full (which the properties above hold to one call per request): the same reply, stored
  // bytes and TTLs, with runs of repeats on shared and distinct keys, full queues, shadow
  // entries, refusals (small limits), waits, keys already used, and requests of every other
  // mode and of several entries between the runs; in a script of one inlined algorithm (its
  // fast path), of two, and of the table path's algorithms.
  const SCRIPTS: AlgorithmName[][] = [
    ['token-bucket'],
    ['gcra'],
    ['sliding-window-counter'],
    ['fixed-window', 'token-bucket'],
    ['concurrency', 'sliding-window-log'],
  ]
  for (const names of SCRIPTS) {
    it(`answers, stores and expires what the batch sent in full does: ${names.join(' + ')}`, async () => {
      const sorted = scriptAlgorithms(names)
      const lua = decideScript(sorted)
      const penalizes = (a: AlgorithmName): boolean => a === 'token-bucket' || a === 'gcra'
      let n = 0
      let repeated = 0
      await fc.assert(
        fc.asyncProperty(
          fc.integer({ min: 1, max: 6 }),
          fc.array(fc.constantFrom<'none' | 'used'>('none', 'used'), {
            minLength: 4,
            maxLength: 4,
          }),
          fc.array(
            fc.record({
              alg: fc.nat(),
              cost: fc.constantFrom(1, 1, 2, 0, 0.5),
              maxWaitMs: fc.constantFrom(0, 0, 300),
              shadow: fc.constantFrom(false, false, true),
              queueFull: fc.constantFrom(false, false, true),
              lease: fc.constantFrom(1, 2),
            }),
            // Entries of one rule and lease that differ in one number or flag are common.
            { minLength: 1, maxLength: 5 },
          ),
          fc.array(
            fc.record({
              mode: fc.constantFrom<WireMode>('c', 'c', 'c', 'c', 'c', 'c', 'r', 'p', 'x', 'f'),
              picks: fc.array(fc.record({ entry: fc.nat(), key: fc.integer({ min: 0, max: 3 }) }), {
                minLength: 1,
                maxLength: 2,
              }),
              one: fc.constantFrom(true, true, true, false),
              // The request, then as many more on the next keys: a run of repeats.
              more: fc.constantFrom(0, 0, 1, 2, 4),
            }),
            { minLength: 1, maxLength: 20, size: 'max' },
          ),
          async (limit, starts, pool, drawn) => {
            const rules = sorted.map((a) => testRule(a, limit, 1000))
            const run = ++n
            const keyOf = (side: string, key: number, rule: number): string =>
              `${repeatPrefix}:${run}:${side}:${key}:${rule}`
            // Entries are shared objects, as one rule's are in a store.
            const entries = pool.map((p) => ({
              rule: rules[p.alg % rules.length]!,
              ruleIndex: p.alg % rules.length,
              cost: p.cost,
              maxWaitMs: p.maxWaitMs,
              shadow: p.shadow,
              queueFull: p.queueFull,
              lease: p.lease,
            }))
            const requests = drawn.flatMap((d) => {
              const picks = d.one ? d.picks.slice(0, 1) : d.picks
              const es = picks.map((p) => entries[p.entry % entries.length]!)
              const mode =
                d.mode === 'f' && !es.every((e) => penalizes(e.rule.algorithm.name)) ? 'c' : d.mode
              return Array.from({ length: 1 + d.more }, (_, j) => ({
                mode,
                entries: es.map((e, i) => ({ ...e, key: String((picks[i]!.key + j) % 4) })),
              }))
            })
            // As BatchQueue marks them.
            const marked = requests.map((r) => ({ ...r, repeats: 0 }))
            let leader: (typeof marked)[number] | undefined
            for (const r of marked) {
              if (
                leader &&
                leader.repeats < MAX_REPEATS &&
                repeatsRequest(leader, r.mode, r.entries)
              ) {
                leader.repeats++
                repeated++
              } else leader = r
            }
            const now = 1_763_000_000_000
            const redisMs = ([s, us]: (string | number)[]): number =>
              Number(s) * 1000 + Math.ceil(Number(us) / 1000)
            const writingFrom = redisMs(await redis.admin.time()) - 1
            for (const side of ['full', 'repeats']) {
              for (const [key, start] of starts.entries()) {
                for (const [ri, rule] of rules.entries()) {
                  if (start !== 'used') continue
                  const e = { rule, key: String(key), cost: 1, maxWaitMs: 0, shadow: false }
                  const packed = encodeBatch([{ mode: 'c', entries: [e] }], sorted)
                  const k = keyOf(side, key, ri)
                  await redis.admin.callBuffer('EVAL', lua, 1, k, ...argv(now - 100, packed))
                }
              }
            }
            const keysOf = (side: string): string[] =>
              requests.flatMap((r) => r.entries.map((e) => keyOf(side, Number(e.key), e.ruleIndex)))
            const call = async (side: string, packed: Buffer): Promise<Buffer> => {
              const keys = keysOf(side)
              return (await redis.admin.callBuffer(
                'EVAL',
                lua,
                keys.length,
                ...keys,
                ...argv(now, packed),
              )) as Buffer
            }
            // Marked as RedisStore marks a call whose keys all differ; the batch sent in full not.
            const packed = encodeBatch(marked, sorted, differ(keysOf('repeats')))
            expect(decodeBatch(packed)).toEqual(decodeBatch(encodeBatch(requests, sorted)))
            const full = await call('full', encodeBatch(requests, sorted))
            expect(await call('repeats', packed)).toEqual(full)
            // Both calls write at the same `now`, so each key's TTL is the same: its expiry
            // (Redis's clock when written, plus the TTL) differs by the time from the first
            // write to the last, as Redis's clock tells it, and a little more: the time a write
            // takes as its base is not bounded exactly by TIME around it (10 ms past on a
            // loaded machine). A TTL taken from another key or another rule is off by more.
            const window = redisMs(await redis.admin.time()) - writingFrom + 25
            for (let key = 0; key < 4; key++) {
              for (let ri = 0; ri < rules.length; ri++) {
                const [b, a] = [keyOf('repeats', key, ri), keyOf('full', key, ri)]
                const name = `${key}:${ri}`
                expect(await redis.admin.type(b), `type of ${name}`).toBe(await redis.admin.type(a))
                expect(await redis.admin.getBuffer(b), `value of ${name}`).toEqual(
                  await redis.admin.getBuffer(a),
                )
                const [eb, ea] = [
                  await redis.admin.pexpiretime(b),
                  await redis.admin.pexpiretime(a),
                ]
                if (ea < 0) expect(eb, `expiry of ${name}`).toBe(ea)
                else {
                  expect(eb - ea, `expiry of ${name}: ${ea} ${eb}`).toBeGreaterThanOrEqual(0)
                  expect(eb - ea, `expiry of ${name}: ${ea} ${eb}`).toBeLessThanOrEqual(window)
                }
              }
            }
          },
        ),
        { numRuns: Number(process.env.FG_RUNS ?? 40) },
      )
      // The draw must exercise what it is about.
      expect(repeated).toBeGreaterThan(40)
    }, 120_000)
  }
})
