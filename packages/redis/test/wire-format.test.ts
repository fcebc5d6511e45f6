import fc from 'fast-check'
import { Redis } from 'ioredis'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import {
  exactRate,
  type AlgorithmName,
  type AlgorithmResult,
  type ConsumeEntry,
} from '@floodgate/core/algorithms'
import { testRule } from '@floodgate/core/testing'
import { decideScript, packResultLua } from '../src/scripts/decide-script.js'
import {
  ARGV,
  ENTRY_BYTES,
  ENTRY_FIELDS,
  ENTRY_FORMAT,
  ENTRY_OFFSET,
  MAX_REPEATS,
  REPEAT_STEP,
  REQUEST_HEADER_BYTES,
  REQUEST_HEADER_FORMAT,
  RESULT_BYTES,
  RESULT_FIELDS,
  RESULT_FORMAT,
  ReplyReader,
  SHORT_RESULT_FORMAT,
  WIRE_MODES,
  decodeBatch,
  encodeBatch,
  encodeReply,
  isShortResult,
  repeatsRequest,
  replyValues,
  requestBytes,
  type WireEntry,
  type WireRequest,
} from '../src/wire-format.js'
import { MAX_TTL_MS } from '../src/key-ttl.js'
import { REDIS_URL, redisAvailable } from './helpers/redis.js'

const available = await redisAvailable()

const ALGORITHMS: AlgorithmName[] = [
  'concurrency',
  'fixed-window',
  'gcra',
  'leaky-bucket',
  'sliding-window-counter',
  'sliding-window-log',
  'token-bucket',
]
const indexOf = (name: string): number => ALGORITHMS.indexOf(name as AlgorithmName) + 1

/** An entry whose rule's burst is `burst` (all the reply's reader takes from an entry). */
const entryOf = (burst: number): WireEntry => ({
  rule: testRule('token-bucket', burst, 1000),
  key: 'k',
  cost: 1,
  maxWaitMs: 0,
  shadow: false,
})

/** A result's fields as the bytes of their doubles: compared so, -0 is not 0. */
const bitsOf = (r: AlgorithmResult): string[] =>
  [r.allowed ? 1 : 0, r.waitMs, r.limit, r.remaining, r.resetMs, r.retryAfterMs].map((x) =>
    Buffer.from(new Float64Array([x]).buffer).toString('hex'),
  )

/** What a reply of full results reads back as (the reply's only shape before the short one). */
const fullResult = ([
  allowed,
  waitMs,
  limit,
  remaining,
  resetMs,
  retryAfterMs,
]: readonly number[]): AlgorithmResult => ({
  allowed: allowed === 1,
  waitMs: waitMs!,
  limit: limit!,
  remaining: remaining!,
  resetMs: resetMs!,
  retryAfterMs: retryAfterMs!,
})

/** Any double a result may carry, -0 and the infinities included. */
const anyDouble = fc.double({ noNaN: true })

/**
 * A result and its entry's burst: any numbers, or the common answer the script packs short
 * (admitted, no wait, limit the burst), or one that misses it by one field (a -0 wait, a limit
 * other than the burst, a -0 or infinite remaining…).
 */
const arbResult: fc.Arbitrary<{ fields: number[]; burst: number }> = fc.oneof(
  fc.record({
    fields: fc.tuple(fc.constantFrom(0, 1), anyDouble, anyDouble, anyDouble, anyDouble, anyDouble),
    burst: fc.integer({ min: 1, max: 1e9 }),
  }),
  fc
    .record({
      burst: fc.oneof(fc.integer({ min: 1, max: 1e9 }), fc.constantFrom(1, 2 ** 53, 1e300)),
      remaining: fc.oneof(
        fc.nat(),
        anyDouble.filter((x) => x >= 0),
        fc.constantFrom(0, -0),
      ),
      resetMs: anyDouble,
      miss: fc.constantFrom('none', 'none', 'none', 'wait', 'retry', 'limit', 'zeroLimit', 'inf'),
    })
    .map(({ burst, remaining, resetMs, miss }) => ({
      burst,
      fields: [
        1,
        miss === 'wait' ? -0 : 0,
        miss === 'limit' ? burst + 1 : miss === 'zeroLimit' ? 0 : burst,
        miss === 'inf' ? Infinity : remaining,
        resetMs,
        miss === 'retry' ? -0 : 0,
      ],
    })),
)

const arbEntry = fc
  .record({
    algorithm: fc.constantFrom(...ALGORITHMS),
    limit: fc.integer({ min: 1, max: 1_000_000 }),
    windowMs: fc.integer({ min: 1, max: 86_400_000 }),
    // + 0 turns -0 into 0: the Lua side prints both as 0.
    cost: fc.double({ min: 0, max: 1e6, noNaN: true }).map((x) => x + 0),
    maxWaitMs: fc.integer({ min: 0, max: 60_000 }),
    shadow: fc.boolean(),
  })
  .map((r): ConsumeEntry => ({
    rule: testRule(r.algorithm, r.limit, r.windowMs),
    key: 'k',
    cost: r.cost,
    maxWaitMs: r.maxWaitMs,
    shadow: r.shadow,
  }))
const arbRequest = fc.record({
  mode: fc.constantFrom(...WIRE_MODES),
  entries: fc.array(arbEntry, { minLength: 1, maxLength: 5 }),
})

/**
 * Requests drawn from a few entries, mostly consumes of one: runs of requests that repeat the
 * one before them are common. Entries are shared objects, as one rule's are in a store; a
 * request may also take a copy of one (equal fields, another object).
 */
const arbRepeating = fc
  .tuple(
    fc.array(arbEntry, { minLength: 1, maxLength: 3 }),
    fc.array(
      fc.record({
        mode: fc.constantFrom(...WIRE_MODES, 'c', 'c', 'c', 'c', 'c'),
        picks: fc.array(fc.nat(2), { minLength: 1, maxLength: 2 }),
        one: fc.constantFrom(true, true, true, false),
        copy: fc.constantFrom(false, false, false, true),
        // One field of the entry changed, the rule kept: packed, it differs by that field.
        vary: fc.constantFrom(
          ...Array<'none'>(8).fill('none'),
          'cost',
          'zero',
          'wait',
          'shadow',
          'lease',
          'full',
        ),
      }),
      { minLength: 1, maxLength: 80, size: 'max' },
    ),
  )
  .map(([pool, drawn]) =>
    drawn.map((d): WireRequest => {
      const picks = d.one ? d.picks.slice(0, 1) : d.picks
      const entries = picks.map((i) => {
        const e = pool[i % pool.length]!
        switch (d.vary) {
          case 'cost':
            return { ...e, cost: e.cost + 1 }
          case 'zero':
            return { ...e, cost: Object.is(e.cost, -0) ? 0 : -0 }
          case 'wait':
            return { ...e, maxWaitMs: e.maxWaitMs + 1 }
          case 'shadow':
            return { ...e, shadow: !e.shadow }
          case 'lease':
            return { ...e, lease: 7 }
          case 'full':
            return { ...e, maxWaitMs: e.maxWaitMs + 1, queueFull: true }
        }
        return d.copy ? { ...e } : e
      })
      return { mode: d.mode, entries }
    }),
  )

/** The requests with their repeats marked as BatchQueue marks them (see `repeatsRequest`). */
function withRepeats(requests: readonly WireRequest[]): WireRequest[] {
  const out: { mode: WireRequest['mode']; entries: WireRequest['entries']; repeats: number }[] = []
  let leader: (typeof out)[number] | undefined
  for (const r of requests) {
    const request = { mode: r.mode, entries: r.entries, repeats: 0 }
    out.push(request)
    if (leader && leader.repeats < MAX_REPEATS && repeatsRequest(leader, r.mode, r.entries)) {
      leader.repeats++
    } else leader = request
  }
  return out
}

/** What the script must read for an entry: the model the packed bytes are checked against. */
function expected(e: ConsumeEntry): Record<string, number> {
  const { rule } = e
  const name = rule.algorithm.name
  // The buckets get their rate's exact grid (steps per ms, steps per unit) instead.
  const bucket = name === 'token-bucket' || name === 'gcra' || name === 'leaky-bucket'
  const { perMs, scale } = exactRate(rule.params.limit, rule.params.windowMs)
  return {
    ai: indexOf(name),
    limit: bucket ? perMs : rule.params.limit,
    window_ms: bucket ? scale : rule.params.windowMs,
    burst: rule.params.burst,
    cost: e.cost,
    // Negative: the client's queue is full.
    max_wait: e.maxWaitMs > 0 && e.queueFull === true ? -e.maxWaitMs : e.maxWaitMs,
    shadow: e.shadow ? 1 : 0,
    size: rule.algorithm.name === 'concurrency' ? 0 : rule.algorithm.stateSize(rule.params),
    lease: 'lease' in e && typeof e.lease === 'number' ? e.lease : 0,
  }
}

describe('the packed wire format', () => {
  it('has one layout: offsets follow the fields, and the struct format matches the byte count', () => {
    let o = 0
    for (const f of ENTRY_FIELDS) {
      expect(ENTRY_OFFSET[f.name]).toBe(o)
      o += f.type === 'B' ? 1 : 8
    }
    expect(ENTRY_BYTES).toBe(o)
    expect(ENTRY_FORMAT).toBe('<Bdddddddd')
    expect(REQUEST_HEADER_BYTES).toBe(3)
  })

  it('the decide script unpacks with the formats and ARGV positions defined here', () => {
    const lua = decideScript()
    expect(lua).toContain(`struct.unpack('${ENTRY_FORMAT}', blob, pos)`)
    expect(lua).toContain(`struct.unpack('${REQUEST_HEADER_FORMAT}', blob, pos)`)
    expect(lua).toContain(`local ${ENTRY_FIELDS.map((f) => f.name).join(', ')}`)
    expect(lua).toContain(`local blob = ARGV[${ARGV.batch}]`)
    expect(lua).toContain(`local LEASE_MS = tonumber(ARGV[${ARGV.leaseMs}])`)
  })

  it('round-trips every request of a batch, field by field (property)', () => {
    fc.assert(
      fc.property(fc.array(arbRequest, { minLength: 1, maxLength: 8 }), (requests) => {
        const packed = encodeBatch(requests, ALGORITHMS)
        const decoded = decodeBatch(packed)
        expect(decoded).toEqual(
          requests.map((r) => ({ mode: r.mode, entries: r.entries.map(expected) })),
        )
      }),
    )
  })

  it('sends a request that repeats the one before it as a count on that one, and reads it back as itself (property)', () => {
    let repeated = 0
    fc.assert(
      fc.property(arbRepeating, (requests) => {
        const marked = withRepeats(requests)
        const packed = encodeBatch(marked, ALGORITHMS)
        const full = encodeBatch(requests, ALGORITHMS)
        // Read back, the repeats are the requests they stand for, field by field, and the
        // requests they repeat are the ones sent in full.
        expect(decodeBatch(packed)).toEqual(decodeBatch(full))
        expect(decodeBatch(full)).toEqual(
          requests.map((r) => ({ mode: r.mode, entries: r.entries.map(expected) })),
        )
        // Only what is packed takes bytes.
        let bytes = 0
        for (let i = 0; i < marked.length; i += 1 + (marked[i]!.repeats ?? 0)) {
          bytes += requestBytes(marked[i]!.entries.length)
        }
        expect(packed.length).toBe(bytes)
        repeated += marked.reduce((n, r) => n + (r.repeats ?? 0), 0)
      }),
      { numRuns: 200 },
    )
    // The draw must exercise what it is about.
    expect(repeated).toBeGreaterThan(200)
  })

  it('repeats only a request of the same mode whose packed bytes would be the same', () => {
    const [e, f] = fc.sample(arbEntry, 2) as [ConsumeEntry, ConsumeEntry]
    const r: WireRequest = { mode: 'c', entries: [e] }
    expect(repeatsRequest(r, 'c', [{ ...e, key: 'other' }])).toBe(true)
    expect(repeatsRequest({ mode: 'p', entries: [e, f] }, 'p', [e, { ...f, key: 'x' }])).toBe(true)
    expect(repeatsRequest(r, 'r', [e])).toBe(false)
    expect(repeatsRequest(r, 'c', [e, e])).toBe(false)
    expect(repeatsRequest({ mode: 'c', entries: [e, f] }, 'c', [e, e])).toBe(false)
    expect(repeatsRequest({ mode: 'c', entries: [e, f] }, 'c', [f, e])).toBe(false)
    expect(repeatsRequest(r, 'c', [{ ...e, cost: e.cost + 1 }])).toBe(false)
    expect(repeatsRequest(r, 'c', [{ ...e, shadow: !e.shadow }])).toBe(false)
    expect(repeatsRequest(r, 'c', [{ ...e, maxWaitMs: e.maxWaitMs + 1 }])).toBe(false)
    expect(repeatsRequest(r, 'c', [{ ...e, lease: 7 }])).toBe(false)
    expect(repeatsRequest(r, 'c', [{ ...e, rule: { ...e.rule } }])).toBe(false)
    const waits = { ...e, maxWaitMs: 100 }
    expect(
      repeatsRequest({ mode: 'c', entries: [waits] }, 'c', [{ ...waits, queueFull: true }]),
    ).toBe(false)
    // 0 and -0 pack to different bytes.
    expect(
      repeatsRequest({ mode: 'c', entries: [{ ...e, cost: 0 }] }, 'c', [{ ...e, cost: -0 }]),
    ).toBe(false)
    // A run longer than the mode byte counts is sent as several.
    const run = withRepeats(Array.from({ length: 70 }, () => r))
    expect(run.map((x) => x.repeats).filter((x) => x !== 0)).toEqual([MAX_REPEATS, MAX_REPEATS, 5])
    expect(decodeBatch(encodeBatch(run, ALGORITHMS))).toHaveLength(70)
    // The mode byte holds the count: at most MAX_REPEATS.
    expect(WIRE_MODES.length).toBeLessThanOrEqual(REPEAT_STEP)
    expect(WIRE_MODES.length - 1 + REPEAT_STEP * MAX_REPEATS).toBeLessThanOrEqual(255)
  })

  it('reads every result back exactly, full or short, request by request, as the full reply reads (property)', () => {
    fc.assert(
      fc.property(
        fc.array(arbResult, { minLength: 1, maxLength: 40 }),
        fc.array(fc.integer({ min: 1, max: 4 }), { minLength: 40, maxLength: 40 }),
        (results, sizes) => {
          const fields = results.map((r) => r.fields)
          const bursts = results.map((r) => r.burst)
          const entries = bursts.map(entryOf)
          const reply = encodeReply(fields, bursts)
          const full = encodeReply(fields)
          expect(reply.length).toBeLessThanOrEqual(full.length)
          // Read request by request (random sizes), as a batch's reply is read.
          const read = (bytes: Buffer): AlgorithmResult[] => {
            const reader = new ReplyReader(replyValues(bytes, results.length))
            const out: AlgorithmResult[] = []
            for (let at = 0, i = 0; at < entries.length; at += sizes[i++]!) {
              out.push(...reader.next(entries.slice(at, at + sizes[i]!)))
            }
            return out
          }
          const want = fields.map(fullResult).map(bitsOf)
          expect(read(full).map(bitsOf)).toEqual(want)
          expect(read(reply).map(bitsOf)).toEqual(want)
        },
      ),
      { numRuns: 300 },
    )
  })

  it('reads replies at any byte offset, one after another of any size, each exactly (property)', () => {
    // The reply arrives as a slice of the socket's read buffer (any alignment), and is read
    // through one scratch array that the next reply reuses, larger or smaller.
    const reply = fc.record({
      results: fc.array(arbResult, { minLength: 1, maxLength: 40, size: 'max' }),
      offset: fc.nat({ max: 15 }),
    })
    fc.assert(
      fc.property(fc.array(reply, { minLength: 1, maxLength: 6 }), (replies) => {
        for (const { results, offset } of replies) {
          const bytes = encodeReply(
            results.map((r) => r.fields),
            results.map((r) => r.burst),
          )
          const host = Buffer.alloc(offset + bytes.length + 3, 0xff)
          bytes.copy(host, offset)
          const reader = new ReplyReader(
            replyValues(host.subarray(offset, offset + bytes.length), results.length),
          )
          for (const { fields, burst } of results) {
            expect(reader.next([entryOf(burst)]).map(bitsOf)).toEqual([bitsOf(fullResult(fields))])
          }
        }
      }),
    )
  })

  it('gives no results for a reply of another shape or length, so the limiter fails open', () => {
    const ok = encodeReply([[1, 0, 10, 9, 100, 0]])
    const short = encodeReply([[1, 0, 10, 9, 100, 0]], [10])
    expect(short.length).toBe(16)
    const wrong: [unknown, number][] = [
      [ok.subarray(0, RESULT_BYTES - 1), 1],
      [Buffer.concat([ok, Buffer.alloc(1)]), 1],
      [[1, 0, 10, 9, 100, 0], 1],
      [ok.toString('latin1'), 1],
      [1, 1],
      [null, 1],
      [undefined, 1],
      [{}, 1],
      // Results of both forms, but not as many as asked for, or bytes left over.
      [short, 2],
      [Buffer.concat([short, short]), 1],
      [Buffer.concat([short, ok]), 1],
      [Buffer.concat([ok, short.subarray(0, 8)]), 2],
      // A short result's first double followed by less than its second.
      [short.subarray(0, 8), 1],
      // 48 bytes that start with a short result: one result and 32 bytes too many.
      [Buffer.concat([short, Buffer.alloc(32)]), 1],
    ]
    for (const [reply, total] of wrong) {
      const entries = Array.from({ length: total }, () => entryOf(10))
      expect(new ReplyReader(replyValues(reply, total)).next(entries)).toEqual([])
    }
    fc.assert(
      fc.property(fc.anything(), (reply) => {
        expect(new ReplyReader(replyValues(reply, 1)).next([entryOf(10)])).toEqual([])
      }),
    )
  })

  it('the decide script packs its results with the format defined here', () => {
    expect(RESULT_FORMAT).toBe(`<${'d'.repeat(RESULT_FIELDS)}`)
    expect(decideScript()).toContain(`struct.pack('${RESULT_FORMAT}', out[1]`)
    expect(decideScript()).toContain(`struct.pack('${SHORT_RESULT_FORMAT}', -out[4], out[5])`)
  })

  it('names a truncated batch', () => {
    const packed = encodeBatch([{ mode: 'c', entries: fc.sample(arbEntry, 2) }], ALGORITHMS)
    expect(() => decodeBatch(packed.subarray(0, packed.length - 1))).toThrow(/truncated at byte 3/)
  })
})

describe.skipIf(!available)('the packed wire format in Redis', () => {
  let redis: Redis
  beforeAll(() => {
    redis = new Redis(REDIS_URL)
  })
  afterAll(() => redis.disconnect())

  // The same loop the decide script runs, returning what it unpacked: Lua's `struct` must read
  // back exactly what the encoder wrote (as strings, so doubles are compared exactly).
  const readBack = `
local blob = ARGV[1]
local pos = 1
local out = {}
while pos <= #blob do
  local n, m
  n, m, pos = struct.unpack('${REQUEST_HEADER_FORMAT}', blob, pos)
  out[#out + 1] = tostring(n)
  out[#out + 1] = tostring(m)
  for _ = 1, n do
    local v = { struct.unpack('${ENTRY_FORMAT}', blob, pos) }
    pos = v[#v]
    for i = 1, #v - 1 do out[#out + 1] = string.format('%.17g', v[i]) end
  end
end
return out`

  it('Node reads back every result Lua packs, exactly (property)', async () => {
    const pack = `return struct.pack('${RESULT_FORMAT}', tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4]), tonumber(ARGV[5]), tonumber(ARGV[6]))`
    const field = fc.double({ noNaN: true, noDefaultInfinity: true })
    await fc.assert(
      fc.asyncProperty(
        fc.tuple(fc.constantFrom(0, 1), field, field, field, field, field),
        async (r) => {
          // %.17g: the argument carries the double exactly.
          const args = r.map((x) => (Object.is(x, -0) ? '-0' : x.toPrecision(17)))
          const reply = await redis.callBuffer('EVAL', pack, 0, ...args)
          expect(new ReplyReader(replyValues(reply, 1)).next([entryOf(1)]).map(bitsOf)).toEqual([
            bitsOf(fullResult(r)),
          ])
        },
      ),
      { numRuns: 50 },
    )
  })

  it("packs a result short exactly when Node's model says so, and it reads back as the full result (property)", async () => {
    // The Lua every script packs an answer with, on the locals o1..o6 and the entry's burst.
    const lua = `local HUGE, MAX_TTL = math.huge, ${MAX_TTL_MS}
local o1, o2, o3, o4, o5, o6, burst = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4]), tonumber(ARGV[5]), tonumber(ARGV[6]), tonumber(ARGV[7])
return ${packResultLua('o', 'burst')}`
    // The same numbers, in full, through the format every reply had before the short one (a
    // non-finite duration or count capped as the script caps it).
    const cap = (x: number): number => (Number.isFinite(x) ? x : MAX_TTL_MS)
    const lua17g = (x: number): string =>
      Object.is(x, -0) ? '-0' : Number.isFinite(x) ? x.toPrecision(17) : x > 0 ? 'inf' : '-inf'
    await fc.assert(
      fc.asyncProperty(arbResult, async ({ fields, burst }) => {
        const reply = (await redis.callBuffer(
          'EVAL',
          lua,
          0,
          ...[...fields, burst].map(lua17g),
        )) as Buffer
        const [allowed, waitMs, limit, remaining, resetMs, retryAfterMs] = fields as [
          number,
          number,
          number,
          number,
          number,
          number,
        ]
        const capped = [
          allowed,
          cap(waitMs),
          limit,
          cap(remaining),
          cap(resetMs),
          cap(retryAfterMs),
        ]
        // Short exactly when Node's model of the test says so (on the numbers as computed),
        // byte for byte its encoding; else in full, capped.
        const short = isShortResult(fields, burst)
        expect(reply).toEqual(short ? encodeReply([fields], [burst]) : encodeReply([capped]))
        expect(reply.length).toBe(short ? 16 : RESULT_BYTES)
        expect(new ReplyReader(replyValues(reply, 1)).next([entryOf(burst)]).map(bitsOf)).toEqual([
          bitsOf(fullResult(capped)),
        ])
      }),
      { numRuns: 200 },
    )
  })

  it('Lua reads back every field the encoder wrote (property)', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(arbRequest, { minLength: 1, maxLength: 4 }), async (requests) => {
        const packed = encodeBatch(requests, ALGORITHMS)
        const got = ((await redis.eval(readBack, 0, packed)) as string[]).map(Number)
        const want = requests.flatMap((r) => [
          r.entries.length,
          WIRE_MODES.indexOf(r.mode),
          ...r.entries.flatMap((e) => ENTRY_FIELDS.map((f) => expected(e)[f.name]!)),
        ])
        expect(got).toEqual(want)
      }),
      { numRuns: 50 },
    )
  })
})
