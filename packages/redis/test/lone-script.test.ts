import fc from 'fast-check'
import { createHash } from 'node:crypto'
import { Redis } from 'ioredis'
import { describe, expect, it } from 'vitest'
import type { AlgorithmName, ConsumeEntry } from '@floodgate/core/algorithms'
import { testRule } from '@floodgate/core/testing'
import { createRedisStore } from '@floodgate/redis'
import {
  SCRIPT_ALGORITHMS,
  decideScript,
  loneScript,
  scriptAlgorithms,
} from '../src/scripts/decide-script.js'
import { encodeBatch, type WireMode } from '../src/wire-format.js'
import { REDIS_URL, adminConnection, redisAvailable, uniquePrefix } from './helpers/redis.js'

const available = await redisAvailable()
const prefix = uniquePrefix('lone')

const sha = (lua: string): string => createHash('sha1').update(lua).digest('hex')

describe.skipIf(!available)('the lone script', () => {
  const redis = adminConnection(prefix)

  // The lone script must be the decide script for the one call it takes: same reply, same
  // stored state, same TTL, from any state a key may hold (Floodgate's own, a state of the
  // wrong size, a value of another type), at any clock.
  for (const algorithm of SCRIPT_ALGORITHMS) {
    it(`answers and writes exactly what the decide script does: ${algorithm}`, async () => {
      const lone = loneScript(algorithm)
      // The decide script's table path: a script of two algorithms runs none inline.
      const names = scriptAlgorithms([algorithm, 'sliding-window-log'])
      const decide = decideScript(names)
      let n = 0
      await fc.assert(
        fc.asyncProperty(
          fc.integer({ min: 1, max: 12 }),
          fc.constantFrom(7, 100, 1000, 60_000),
          fc.constantFrom<'none' | 'short' | 'hash'>('none', 'none', 'short', 'hash'),
          fc.array(
            fc.record({
              dt: fc.integer({ min: -50, max: 700 }),
              cost: fc.constantFrom(1, 1, 2, 0, 0.5, 40),
              maxWaitMs: fc.constantFrom(0, 0, 50, 400),
              shadow: fc.boolean(),
            }),
            { minLength: 1, maxLength: 20 },
          ),
          async (limit, windowMs, start, steps) => {
            const rule = testRule(algorithm, limit, windowMs)
            const keys = [`${prefix}:${algorithm}:a${++n}`, `${prefix}:${algorithm}:b${n}`]
            if (start === 'short') for (const k of keys) await redis.admin.set(k, 'xyz')
            if (start === 'hash') for (const k of keys) await redis.admin.hset(k, 'f', '1')
            let now = 1_763_000_000_000
            for (const [i, s] of steps.entries()) {
              now += s.dt
              const entry: ConsumeEntry & { lease: number } = {
                rule,
                key: 'k',
                cost: s.cost,
                maxWaitMs: s.maxWaitMs,
                shadow: s.shadow,
                lease: i + 1,
              }
              const argv = (algorithms: AlgorithmName[]): (string | Buffer)[] => [
                String(now),
                '60000',
                '60000',
                encodeBatch([{ mode: 'c', entries: [entry] }], algorithms),
              ]
              // Both calls, then both TTLs, in one MULTI: within a few milliseconds of each
              // other, whatever the machine's load.
              const replies = (await redis.admin
                .multi()
                .callBuffer('EVAL', lone, 1, keys[0]!, ...argv([algorithm]))
                .callBuffer('EVAL', decide, 1, keys[1]!, ...argv(names))
                .pttl(keys[0]!)
                .pttl(keys[1]!)
                .exec())!.map(([err, reply]: [Error | null, unknown]) => err ?? reply)
              const [a, b, ta, tb] = replies as [Buffer, Buffer, number, number]
              expect(a, `reply, step ${i}`).toEqual(b)
              const [va, vb] = await Promise.all(
                keys.map((k) => redis.admin.getBuffer(k).catch(() => 'not a string')),
              )
              expect(va, `state, step ${i}`).toEqual(vb)
              // -1: no TTL (the other type, never written), -2: no key.
              if (ta < 0) expect(tb, `ttl, step ${i}`).toBe(ta)
              else expect(Math.abs(ta - tb), `ttl ${ta} ${tb}, step ${i}`).toBeLessThanOrEqual(25)
            }
          },
        ),
        { numRuns: Number(process.env.FG_RUNS ?? 25) },
      )
    })
  }

  it('refuses any call but one consume of one entry', async () => {
    const rule = testRule('token-bucket', 5, 1000)
    const entry = { rule, key: 'k', cost: 1, maxWaitMs: 0, shadow: false }
    const lone = loneScript('token-bucket')
    const calls: { mode: WireMode; entries: (typeof entry)[] }[][] = [
      [{ mode: 'r', entries: [entry] }],
      [{ mode: 'c', entries: [entry, entry] }],
    ]
    for (const requests of calls) {
      const packed = encodeBatch(requests, ['token-bucket'])
      await expect(
        redis.admin.callBuffer('EVAL', lone, 1, `${prefix}:refuse`, '', '0', '60000', packed),
      ).rejects.toThrow(/one consume of one entry/)
    }
    expect(await redis.admin.exists(`${prefix}:refuse`)).toBe(0)
  })

  it('decides a lone one-entry consume; anything else goes to the decide script', async () => {
    const client = new Redis(REDIS_URL, {
      enableOfflineQueue: false,
      maxRetriesPerRequest: 0,
      autoResendUnfulfilledCommands: false,
    })
    await new Promise((r) => client.once('ready', r))
    const shas: string[] = []
    const send = client.sendCommand.bind(client)
    client.sendCommand = (cmd) => {
      if (cmd.name === 'evalsha') shas.push(String(cmd.args[0]))
      return send(cmd)
    }
    const store = createRedisStore({ client, prefix })
    const tb = testRule('token-bucket', 100, 1000)
    const fw = testRule('fixed-window', 100, 1000)
    const e = (rule: typeof tb, key: string): ConsumeEntry => ({
      rule,
      key,
      cost: 1,
      maxWaitMs: 0,
      shadow: false,
    })
    try {
      await store.consume([e(tb, 'x')], 0)
      await store.consume([e(fw, 'x')], 0)
      await store.consume([e(tb, 'x'), e(fw, 'x')], 0)
      await store.refund([e(tb, 'x')], 0)
      // Started in one turn: the first leaves alone, the other two share a call.
      await Promise.all(['p', 'q', 'r'].map((k) => store.consume([e(tb, k)], 0)))
      expect(shas).toEqual([
        sha(loneScript('token-bucket')),
        sha(loneScript('fixed-window')),
        sha(decideScript(['fixed-window', 'token-bucket'])),
        sha(decideScript(['token-bucket'])),
        sha(loneScript('token-bucket')),
        sha(decideScript(['token-bucket'])),
      ])
    } finally {
      await store.close()
      client.disconnect()
    }
  })
})
