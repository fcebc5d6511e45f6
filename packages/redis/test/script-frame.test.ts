import fc from 'fast-check'
import { Command } from 'ioredis'
import { describe, expect, it } from 'vitest'
import type { RedisClient } from '../src/connection.js'
import { tailedScript, type FrameTail } from '../src/script-frame.js'

const LUA = "return redis.call('GET', KEYS[1])"

/** A client that only records the commands given to it: the frame is what is compared. */
function recordingClient(keyPrefix: string | undefined): { client: RedisClient; sent: Command[] } {
  const sent: Command[] = []
  const client = {
    options: keyPrefix === undefined ? {} : { keyPrefix },
    sendCommand: (c: Command) => {
      sent.push(c)
      return c.promise
    },
  }
  return { client: client as unknown as RedisClient, sent }
}

const tailOf = (bytes: Uint8Array): FrameTail => ({
  bytes: bytes.length,
  writeTo: (target, offset) => target.set(bytes, offset),
})

/** What ioredis itself writes for the same command (a Buffer argument: its buffer mode). */
function ioredisFrame(
  name: 'eval' | 'evalsha',
  head: string,
  keys: string[],
  argv: string[],
  tail: Uint8Array,
  keyPrefix: string | undefined,
): Buffer {
  const args = [head, String(keys.length), ...keys, ...argv, Buffer.from(tail)]
  return Buffer.from(new Command(name, args, { keyPrefix }).toWritable({}) as Buffer)
}

describe('the script frame writer', () => {
  it('writes byte for byte what ioredis writes, EVAL on a new connection and EVALSHA after, with any keys, arguments, tail and key prefix (property)', () => {
    // Any UTF-16 code units, lone surrogates included: the ASCII path and the UTF-8 path.
    const text = fc.oneof(fc.string(), fc.string({ unit: 'binary', maxLength: 12 }))
    fc.assert(
      fc.property(
        fc.array(text, { minLength: 1, maxLength: 6 }),
        fc.array(text, { maxLength: 4 }),
        fc.uint8Array({ maxLength: 300, size: 'max' }),
        fc.option(fc.string({ minLength: 1, maxLength: 10 }), { nil: undefined }),
        (keys, argv, tail, keyPrefix) => {
          const { client, sent } = recordingClient(keyPrefix)
          const call = tailedScript(client, LUA)
          void call(keys, argv, tailOf(tail)).catch(() => {})
          void call(keys, argv, tailOf(tail)).catch(() => {})
          const socket = {}
          const first = sent[0]!.toWritable(socket) as Buffer
          const second = sent[1]!.toWritable(socket) as Buffer
          expect(first.equals(ioredisFrame('eval', LUA, keys, argv, tail, keyPrefix))).toBe(true)
          const sha = (sent[1]!.args as string[])[0]!
          expect(second.equals(ioredisFrame('evalsha', sha, keys, argv, tail, keyPrefix))).toBe(
            true,
          )
        },
      ),
      { numRuns: 300 },
    )
  })

  it('writes the counts of any size in decimal', () => {
    const { client, sent } = recordingClient(undefined)
    const keys = Array.from({ length: 12 }, (_, i) => `k${i}`)
    const argv = ['x'.repeat(10_000), '']
    const tail = new Uint8Array(100_000).fill(7)
    void tailedScript(client, LUA)(keys, argv, tailOf(tail)).catch(() => {})
    const frame = sent[0]!.toWritable({}) as Buffer
    expect(frame.equals(ioredisFrame('eval', LUA, keys, argv, tail, undefined))).toBe(true)
  })
})
