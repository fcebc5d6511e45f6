import fc from 'fast-check'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createLimiter, type Limiter } from '@floodgate/core'
import type { RequestFacts } from '@floodgate/core/http'
import { createRedisStore } from '@floodgate/redis'
import { RESULT_BYTES, SHORT_RESULT_FIELDS, encodeReply } from '../src/wire-format.js'
import { ScriptedRespServer, bulk, type Answer } from './helpers/scripted-resp-server.js'

const facts = (ip: string): RequestFacts => ({ method: 'GET', path: '/api', ip, headers: {} })

/** Bytes of a short result (a plain admission: `-remaining`, `resetMs`). */
const SHORT_RESULT_BYTES = SHORT_RESULT_FIELDS * 8

/**
 * Whether a reply of these bytes has the shape of one result: six doubles whose first has no
 * sign bit, or two whose first has one (the short form). The reader goes by the first double's
 * sign, as the script packs it; any other length or sign leaves bytes over or missing.
 */
function oneResultShape(b: Uint8Array): boolean {
  if (b.length !== RESULT_BYTES && b.length !== SHORT_RESULT_BYTES) return false
  const first = Buffer.from(b).readDoubleLE(0)
  const signed = first < 0 || Object.is(first, -0)
  return signed === (b.length === SHORT_RESULT_BYTES)
}

/** Raw RESP replies a broken or hostile server could give a script call. */
const arbReply: fc.Arbitrary<{ resp: Buffer; wellFormed: boolean }> = fc.oneof(
  fc
    .oneof(
      fc.uint8Array({ minLength: RESULT_BYTES, maxLength: RESULT_BYTES }),
      fc.uint8Array({ minLength: SHORT_RESULT_BYTES, maxLength: SHORT_RESULT_BYTES }),
      fc.uint8Array({ maxLength: 3 * RESULT_BYTES }),
    )
    .map((b) => ({ resp: bulk(Buffer.from(b)), wellFormed: oneResultShape(b) })),
  fc.integer().map((n) => ({ resp: Buffer.from(`:${n}\r\n`), wellFormed: false })),
  // The reply of the format before this one: six integers.
  fc.array(fc.integer(), { minLength: 6, maxLength: 6 }).map((ns) => ({
    resp: Buffer.from(`*6\r\n${ns.map((n) => `:${n}\r\n`).join('')}`),
    wellFormed: false,
  })),
  fc.array(fc.string({ maxLength: 60 }), { maxLength: 4 }).map((ss) => ({
    resp: Buffer.concat([Buffer.from(`*${ss.length}\r\n`), ...ss.map((s) => bulk(s))]),
    wellFormed: false,
  })),
  fc.constantFrom(
    { resp: Buffer.from('$-1\r\n'), wellFormed: false },
    { resp: Buffer.from('*-1\r\n'), wellFormed: false },
    { resp: Buffer.from('+OK\r\n'), wellFormed: false },
    { resp: Buffer.from('-ERR boom\r\n'), wellFormed: false },
    { resp: Buffer.from('*1\r\n*1\r\n:1\r\n'), wellFormed: false },
  ),
)

describe('RedisStore against a server that answers its script with anything', () => {
  let server: ScriptedRespServer
  let limiter: Limiter
  let next: Answer = bulk(encodeReply([[1, 0, 10, 9, 6000, 0]]))
  const logged: unknown[] = []

  beforeAll(async () => {
    server = await ScriptedRespServer.start(() => next)
    const store = createRedisStore({ url: server.url, prefix: 'fghostile', callTimeoutMs: 1000 })
    limiter = createLimiter({
      store,
      decisionTimeoutMs: 1000,
      failOpenLogIntervalMs: 1,
      logger: {
        warn: (o: unknown) => logged.push(o),
        error: () => {},
        info: () => {},
        debug: () => {},
      },
      rules: [{ id: 'r', limit: 10, window: '1m' }],
    })
    await Promise.all([store.ready, limiter.ready])
  })
  afterAll(async () => {
    await limiter.close()
    await server.stop()
  })

  it('decides from a well-formed reply (the server is reached at all)', async () => {
    next = bulk(encodeReply([[1, 0, 10, 9, 6000, 0]]))
    const d = await limiter.check(facts('10.0.0.1'))
    expect(d).toMatchObject({ allowed: true, failedOpen: false, remaining: 9 })
    next = bulk(encodeReply([[0, 0, 10, 0, 6000, 3000]]))
    expect(await limiter.check(facts('10.0.0.1'))).toMatchObject({
      allowed: false,
      failedOpen: false,
    })
  })

  it('fails open, naming the answer, on a reply of the wrong shape', async () => {
    next = Buffer.from('*6\r\n:1\r\n:0\r\n:10\r\n:9\r\n:6000\r\n:0\r\n')
    logged.length = 0
    expect(await limiter.check(facts('10.0.0.2'))).toMatchObject({
      allowed: true,
      failedOpen: true,
    })
    expect(JSON.stringify(logged)).toContain('FG_ERR_STORE_ANSWER_INVALID')
  })

  it('survives any late reply: a garbled answer after the deadline leaves nothing unhandled (property)', async () => {
    const store = createRedisStore({ url: server.url, prefix: 'fghostile', callTimeoutMs: 20 })
    const quick = createLimiter({
      store,
      decisionTimeoutMs: 20,
      rules: [{ id: 'r', limit: 10, window: '1m' }],
      logger: { warn: () => {}, error: () => {}, info: () => {}, debug: () => {} },
    })
    await Promise.all([store.ready, quick.ready])
    try {
      await fc.assert(
        fc.asyncProperty(arbReply, async ({ resp }) => {
          next = { afterMs: 40, resp }
          const d = await quick.check(facts('10.0.0.4'))
          expect(d).toMatchObject({ allowed: true, failedOpen: true })
          // Let the late answer arrive and be handled (an unhandled rejection fails the run).
          await new Promise((r) => setTimeout(r, 60))
        }),
        { numRuns: 25 },
      )
      // The connection those late replies came in on still pairs replies with calls. Asked
      // through a second store on the same client, with a deadline a loaded CI machine meets
      // (a 20 ms one is missed there by scheduling alone).
      next = bulk(encodeReply([[1, 0, 10, 9, 6000, 0]]))
      const after = createLimiter({
        store: createRedisStore({ client: store.client, prefix: 'fghostile', callTimeoutMs: 5000 }),
        decisionTimeoutMs: 5000,
        rules: [{ id: 'r', limit: 10, window: '1m' }],
      })
      try {
        expect(await after.check(facts('10.0.0.4'))).toMatchObject({
          allowed: true,
          failedOpen: false,
          remaining: 9,
        })
      } finally {
        await after.close()
      }
    } finally {
      await quick.close()
    }
  })

  it("answers every check, and fails open on anything but a reply of one result's shape (property)", async () => {
    await fc.assert(
      fc.asyncProperty(arbReply, async ({ resp, wellFormed }) => {
        next = resp
        const calls = server.scriptCalls
        const d = await limiter.check(facts('10.0.0.3'))
        expect(server.scriptCalls).toBeGreaterThan(calls)
        if (!wellFormed) expect(d).toMatchObject({ allowed: true, failedOpen: true })
        // A reply of one result's shape is read as the script's; nonsense in it still fails open.
        if (d.failedOpen) expect(d.allowed).toBe(true)
      }),
      { numRuns: 150 },
    )
  })
})
