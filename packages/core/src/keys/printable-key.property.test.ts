import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { createLimiter } from '../limiter.js'
import { MAX_KEY_LENGTH } from './hash-key.js'
import { isPrintable, MAX_PRINTABLE_KEY_LENGTH, printableKey } from './printable-key.js'

/** The model's reading of a printed key: the key it stands for, or undefined for a digest. */
function decode(text: string): string | undefined {
  if (text.startsWith('\\#')) return undefined
  let out = ''
  for (let i = 0; i < text.length; i++) {
    const c = text[i]!
    if (c !== '\\') {
      out += c
      continue
    }
    const next = text[i + 1]
    if (next === '\\') {
      out += '\\'
      i += 1
    } else if (next === 'u' && /^[0-9a-f]{4}$/.test(text.slice(i + 2, i + 6))) {
      out += String.fromCharCode(parseInt(text.slice(i + 2, i + 6), 16))
      i += 5
    } else {
      throw new Error(`not an escape at ${i} of ${JSON.stringify(text)}`)
    }
  }
  return out
}

/**
 * The model's escape, code point by code point: a backslash doubled; a control character
 * (C0, DEL, C1), U+2028, U+2029 or a lone surrogate as `\uXXXX`; anything else as it is.
 */
function escape(k: string): string {
  let out = ''
  for (const c of k) {
    const n = c.charCodeAt(0)
    const lone = c.length === 1 && n >= 0xd800 && n <= 0xdfff
    const control = n < 0x20 || (n >= 0x7f && n <= 0x9f) || n === 0x2028 || n === 0x2029
    if (c === '\\') out += '\\\\'
    else if (lone || control) out += `\\u${n.toString(16).padStart(4, '0')}`
    else out += c
  }
  return out
}

// What stored keys hold: core's own prefixes, the composite separator, escapes, tabs a client
// put in a header, line breaks of every kind, lone surrogates and well-formed pairs, and
// lengths around the stored bound and the printed bound.
const unit = fc.oneof(
  { weight: 4, arbitrary: fc.constantFrom('a', 'Z', '0', ':', '.', '#', '?', 'é', ' ') },
  {
    weight: 3,
    arbitrary: fc.constantFrom(
      '\u0000',
      '\u001f',
      '\t',
      '\n',
      '\r',
      '\u007f',
      '\u0085',
      '\u2028',
      '\u2029',
      '\\',
      'u',
      '\ud800',
      '\udfff',
      '\ud83d\ude00',
    ),
  },
)
const key = fc.oneof(
  fc.string({ unit, maxLength: 12 }),
  fc.string({ unit, minLength: MAX_KEY_LENGTH - 2, maxLength: MAX_KEY_LENGTH + 1 }),
  fc.string({ unit: 'binary', maxLength: 40 }),
  fc.string({ unit: 'grapheme-ascii', minLength: 250, maxLength: 300 }),
)

describe('printableKey', () => {
  it('property: prints a key as the model escapes it, read back as that key; printable keys as they are', () => {
    fc.assert(
      fc.property(key, (k) => {
        const text = printableKey(k)
        expect(text.length).toBeLessThanOrEqual(MAX_PRINTABLE_KEY_LENGTH)
        expect(k === '' || isPrintable(text)).toBe(true)
        const escaped = escape(k)
        if (escaped.length <= MAX_PRINTABLE_KEY_LENGTH) {
          expect(text).toBe(escaped)
          expect(decode(text)).toBe(k)
        } else {
          expect(text).toMatch(/^\\#[A-Za-z0-9_-]{22}$/)
          expect(decode(text)).toBeUndefined()
        }
        const plain = k.length <= MAX_PRINTABLE_KEY_LENGTH && [...k].every((c) => escape(c) === c)
        if (plain) expect(text).toBe(k)
      }),
      { numRuns: 3000 },
    )
  })

  it('property: two different keys never print alike, also when one is the printed form of the other', () => {
    const pair = fc.oneof(
      fc.tuple(key, key),
      key.map((k): [string, string] => [k, printableKey(k)]),
      key.map((k): [string, string] => [printableKey(k), k]),
    )
    fc.assert(
      fc.property(pair, ([a, b]) => {
        expect(printableKey(a) === printableKey(b)).toBe(a === b)
      }),
      { numRuns: 3000 },
    )
  })
})

describe('topClients with clearKeys', () => {
  // One request of a client: its header value (undefined: no header, so the IP fallback) and
  // address.
  const client = fc.record({
    header: fc.option(fc.string({ unit, maxLength: 6 }), { nil: undefined }),
    ip: fc.constantFrom('203.0.113.7', '198.51.100.1', '2001:db8::1'),
  })

  it('property: lists every refused client once, printable, with the refusals a model counts', () => {
    fc.assert(
      fc.property(fc.array(client, { maxLength: 60 }), (requests) => {
        const limiter = createLimiter({
          rules: [
            { id: 'one', key: 'header:x-k', limit: 1, window: '1h' },
            { id: 'pair', key: ['header:x-k', 'ip'], limit: 1, window: '1h' },
          ],
          clock: () => 1_000_000,
          topClients: { clearKeys: true, size: 1000 },
        })
        // The model: who a request is under each rule, and how many of its requests each
        // rule refuses (all but its first; a request refused by one rule is charged by none,
        // so the other rule's count stays where it was).
        const seen = { one: new Map<string, number>(), pair: new Map<string, number>() }
        const refusals = { one: new Map<string, number>(), pair: new Map<string, number>() }
        for (const r of requests) {
          const present = r.header !== undefined && r.header !== ''
          const who = {
            one: present ? `h:${r.header}` : `ip:${r.ip}`,
            pair: present ? `hp:${r.header}|${r.ip}` : `ip:${r.ip}`,
          }
          const over = (['one', 'pair'] as const).some((id) => (seen[id].get(who[id]) ?? 0) >= 1)
          for (const id of ['one', 'pair'] as const) {
            if (over) {
              if ((seen[id].get(who[id]) ?? 0) >= 1) {
                refusals[id].set(who[id], (refusals[id].get(who[id]) ?? 0) + 1)
              }
            } else {
              seen[id].set(who[id], 1)
            }
          }
          const d = limiter.check({
            method: 'GET',
            path: '/',
            ip: r.ip,
            headers: r.header === undefined ? {} : { 'x-k': r.header },
          })
          if (d instanceof Promise) throw new Error('expected a synchronous decision')
        }
        for (const id of ['one', 'pair'] as const) {
          const top = limiter.topClients(id, { limit: 10_000 })
          for (const c of top) expect(isPrintable(c.client)).toBe(true)
          expect(new Set(top.map((c) => c.client)).size).toBe(top.length)
          const counts = (xs: Iterable<number>) => [...xs].sort((a, b) => a - b)
          expect(counts(top.map((c) => c.count))).toEqual(counts(refusals[id].values()))
        }
      }),
      { numRuns: 300 },
    )
  })
})
