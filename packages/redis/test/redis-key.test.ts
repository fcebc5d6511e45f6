import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { keyDigest } from '@floodgate/core/algorithms'
import { hashTag, redisKey } from '../src/redis-key.js'

describe('redisKey', () => {
  it('is prefix:{tag}:stateId for any sequence of client keys, prefixes and rules (property)', () => {
    // Each client key remembers the last Redis key it went into: asking again with another
    // prefix or rule, or for another client in between, must never return a remembered key
    // that is not the one asked for.
    const pick = (values: string[]) => fc.constantFrom(...values)
    const clientKey = fc.oneof(pick(['203.0.113.7', '::1', 'user:1', '']), fc.string())
    const prefix = fc.oneof(
      pick(['fg', 'fg:a', '']),
      fc.string().filter((p) => !/[{}]/.test(p)),
    )
    const stateId = fc.oneof(pick(['per-ip|token-bucket', 'api|gcra', '']), fc.string())
    // size 'max': at fast-check's default size an array of maxLength 40 holds about ten calls.
    const callsArb = fc.array(fc.tuple(prefix, clientKey, stateId), { maxLength: 40, size: 'max' })
    fc.assert(
      fc.property(callsArb, (calls) => {
        for (const [p, k, id] of calls) {
          const tag = keyDigest(k)
          expect(hashTag(k)).toBe(tag)
          expect(redisKey(p, k, id)).toBe(`${p}:{${tag}}:${id}`)
        }
      }),
    )
  })
})
