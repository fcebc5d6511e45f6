import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { decodeText } from './decode-text.js'

// Bytes that are not UTF-8: what a file saved as Latin-1 or Windows-1252 holds for 'é' (0xE9),
// a lone continuation byte, a sequence cut short, an overlong form, an encoded surrogate, and
// bytes UTF-8 never uses. Each was read as U+FFFD, so a header value, a key value or a
// description changed without a word.
const notUtf8 = fc.constantFrom(
  [0xe9],
  [0x80],
  [0xc3],
  [0xe2, 0x82],
  [0xc0, 0xaf],
  [0xed, 0xa0, 0x80],
  [0xf5, 0x80, 0x80, 0x80],
  [0xff],
)
// Text around the bad bytes, with line breaks and U+FFFD itself, written on purpose (it is
// valid text and must not be mistaken for the fault).
const text = fc
  .string({
    unit: fc.oneof(
      fc.constantFrom('\n', '\uFFFD', 'é', '😀', '"'),
      fc.string({ unit: 'grapheme', maxLength: 1 }),
    ),
    maxLength: 40,
  })
  .filter((t) => !t.startsWith('\uFEFF'))

describe('decodeText', () => {
  it('refuses bytes that are not UTF-8, naming the line, column and byte of the first', () => {
    fc.assert(
      fc.property(fc.boolean(), text, notUtf8, text, (bom, before, bad, after) => {
        const head = Buffer.from(`${bom ? '\uFEFF' : ''}${before}`, 'utf8')
        const bytes = Buffer.concat([head, Buffer.from(bad), Buffer.from(after, 'utf8')])
        const line = before.split('\n').length
        const column = before.length - before.lastIndexOf('\n')
        expect(() => decodeText(bytes)).toThrow(
          `is not valid UTF-8 at line ${line}, column ${column} (byte ${head.length})`,
        )
      }),
      { numRuns: 500 },
    )
  })

  it('refuses UTF-16 with an unpaired surrogate, naming where it is', () => {
    const bytes = Buffer.from('\uFEFF[{"id": "a\uD800"}]', 'utf16le')
    expect(() => decodeText(bytes)).toThrow('is not valid UTF-16LE at line 1, column 11 (byte 22)')
    expect(() => decodeText(Buffer.from(bytes).swap16())).toThrow(
      'is not valid UTF-16BE at line 1, column 11 (byte 22)',
    )
  })

  it('reads valid text in every encoding it knows, U+FFFD included', () => {
    fc.assert(
      fc.property(text, (t) => {
        expect(decodeText(Buffer.from(t, 'utf8'))).toBe(t)
        expect(decodeText(Buffer.from(`\uFEFF${t}`, 'utf8'))).toBe(t)
        expect(decodeText(Buffer.from(`\uFEFF${t}`, 'utf16le'))).toBe(t)
        expect(decodeText(Buffer.from(`\uFEFF${t}`, 'utf16le').swap16())).toBe(t)
      }),
      { numRuns: 300 },
    )
  })
})
