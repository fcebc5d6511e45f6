import { createHash } from 'node:crypto'
import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import type { RequestFacts } from '../request-facts.js'
import type { Rule } from '../rules/rule.js'
import { compileKey } from './build-key.js'
import { boundKey, MAX_KEY_LENGTH } from './hash-key.js'

// One client as the key function sees it: each part's builder output, and its address.
interface Input {
  readonly parts: readonly string[]
  readonly ip: string | undefined
}

const rule = (arity: number, fallbackKey: Rule['fallbackKey']): Rule => ({
  id: 'r',
  match: {},
  key: Array.from({ length: arity }, (_, i) => `custom:p${i}` as const),
  fallbackKey,
  algorithm: 'token-bucket',
  limit: 1,
  windowMs: 1000,
  burst: 1,
  cost: 1,
  onLimit: { action: 'reject', status: 429 },
  shadow: false,
  count: 'all',
})

function keyFn(arity: number, fallbackKey: Rule['fallbackKey']): (i: Input) => string | undefined {
  const builders = Object.fromEntries(
    Array.from({ length: arity }, (_, i) => [`p${i}`, (req: Input) => req.parts[i]]),
  )
  const fn = compileKey<Input>(rule(arity, fallbackKey), builders, 64)
  return (input) => {
    const facts: RequestFacts<Input> = {
      method: 'GET',
      path: '/',
      ip: input.ip,
      headers: {},
      request: input,
    }
    return fn(facts)
  }
}

// Who the client is: its parts when all are present, else the fallback it falls to.
function identity(input: Input, fallbackKey: Rule['fallbackKey']): string {
  if (input.parts.every((p) => p.length > 0)) return JSON.stringify(['parts', input.parts])
  if (fallbackKey === 'ip' && input.ip !== undefined) return JSON.stringify(['ip', input.ip])
  return fallbackKey === 'skip' ? 'skip' : 'shared'
}

// Strings an attacker would pick: core's own prefixes, separators, escapes, lengths around
// the hashing bound, and the stored form of some long key.
const part = fc.oneof(
  fc.string({ maxLength: 8 }),
  fc.constantFrom('', '\u0000', '\u0000\u0000', '\u0000shared', '\u0000ip:203.0.113.9'),
  fc.constantFrom('\u001f', '\\', '\\s', '\\\\', '#', 'a\u001fb'),
  fc.string({ minLength: MAX_KEY_LENGTH - 2, maxLength: MAX_KEY_LENGTH + 2 }),
  fc.string({ minLength: MAX_KEY_LENGTH + 1, maxLength: 200 }).map(boundKey),
)
const ip = fc.constantFrom(undefined, '203.0.113.9', '198.51.100.1')
const input = (arity: number): fc.Arbitrary<Input> =>
  fc.record({ parts: fc.array(part, { minLength: arity, maxLength: arity }), ip })

// Splits a stored key into `arity` raw parts: the input that would forge it, if any can.
function forge(stored: string, arity: number, cuts: readonly number[]): Input {
  const at = [...cuts.slice(0, arity - 1)].sort((a, b) => a - b).map((c) => c % (stored.length + 1))
  const parts: string[] = []
  let from = 0
  for (const c of at) {
    parts.push(stored.slice(from, c))
    from = c
  }
  parts.push(stored.slice(from))
  return { parts, ip: undefined }
}

describe('stored client keys are injective', () => {
  for (const arity of [1, 2, 3]) {
    for (const fallbackKey of ['ip', 'shared'] as const) {
      it(`two different clients never share a key (${arity} part(s), fallback ${fallbackKey})`, () => {
        const fn = keyFn(arity, fallbackKey)
        const cuts = fc.array(fc.nat(), { minLength: 2, maxLength: 2 })
        // Either two unrelated clients, or a second one whose raw parts spell the first one's
        // stored key (with the separator anywhere), which is what an attacker would try.
        const pair = fc.oneof(
          fc.tuple(input(arity), input(arity)),
          fc.tuple(input(arity), cuts).map(([a, c]): [Input, Input] => {
            const stored = fn(a)!
            return [a, forge(stored, arity, c)]
          }),
        )
        fc.assert(
          fc.property(pair, ([a, b]) => {
            const same = identity(a, fallbackKey) === identity(b, fallbackKey)
            expect(fn(a) === fn(b)).toBe(same)
          }),
          { numRuns: 2000 },
        )
      })
    }
  }

  it('a short raw key equal to the stored form of a long key stays apart from it', () => {
    const fn = keyFn(1, 'ip')
    const long = { parts: ['x'.repeat(MAX_KEY_LENGTH + 1)], ip: undefined }
    const stored = fn(long)!
    expect(stored.length).toBeLessThanOrEqual(MAX_KEY_LENGTH + 1)
    expect(fn({ parts: [stored], ip: undefined })).not.toBe(stored)
    expect(fn({ parts: ['\u0000shared'], ip: undefined })).not.toBe(
      fn({ parts: [''], ip: undefined }),
    )
  })

  it('property: long keys that differ in one lone surrogate are stored apart (hashed as UTF-8, every lone surrogate read as U+FFFD)', () => {
    const fn = keyFn(1, 'ip')
    const codeUnit = fc.oneof(
      fc.integer({ min: 0xd800, max: 0xdfff }).map((c) => String.fromCharCode(c)),
      fc.constant('\uFFFD'),
    )
    fc.assert(
      fc.property(
        fc.string({ unit: 'binary', minLength: MAX_KEY_LENGTH, maxLength: MAX_KEY_LENGTH + 40 }),
        fc.nat(),
        codeUnit,
        codeUnit,
        (base, at, u, v) => {
          fc.pre(u !== v)
          const cut = at % (base.length + 1)
          const key = (c: string) =>
            fn({ parts: [base.slice(0, cut) + c + base.slice(cut)], ip: undefined })
          expect(key(u)).not.toBe(key(v))
        },
      ),
      { numRuns: 500 },
    )
  })

  it('a well-formed long key keeps the stored form it always had', () => {
    // Hashes already in stores must not move: the UTF-8 SHA-256 of the key, as before.
    expect(boundKey('é'.repeat(MAX_KEY_LENGTH + 1))).toBe(
      '\u0000#' +
        createHash('sha256')
          .update('é'.repeat(MAX_KEY_LENGTH + 1))
          .digest('base64url')
          .slice(0, 22),
    )
  })
})
