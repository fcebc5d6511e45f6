import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { MAX_CLIENT_NAME, reportClientName } from './report-client-name.js'

// What the rules service refuses in a reported client name (its report check).
// eslint-disable-next-line no-control-regex -- control characters are what the service refuses
const REFUSED = /[\u0000-\u001f\u007f]|\p{Cs}/u

// Names built from the characters that matter: control characters, quotes, backslashes, lone
// and paired surrogates, plain letters; up to 140 characters (stored keys are at most 129).
const part = fc.constantFrom(
  '\u0000',
  '\t',
  '\n',
  '\u007f',
  '"',
  '\\',
  'a',
  'Z',
  '\ud800',
  '\udc00',
  'é',
  '😀',
  ':',
  ' ',
)
const name = fc
  .array(part, { maxLength: 140, size: 'max' })
  .map((parts) => parts.join(''))
  .filter((s) => s.length > 0)

describe('reportClientName (property)', () => {
  it('always gives a name the service takes, keeps printable names, and keeps distinct names distinct', () => {
    fc.assert(
      fc.property(fc.uniqueArray(name, { minLength: 2, maxLength: 20 }), (names) => {
        const out = names.map(reportClientName)
        for (const [i, n] of names.entries()) {
          const o = out[i]!
          expect(o.length).toBeGreaterThan(0)
          expect(o.length).toBeLessThanOrEqual(MAX_CLIENT_NAME)
          expect(REFUSED.test(o)).toBe(false)
          if (!REFUSED.test(n) && !n.startsWith('"')) expect(o).toBe(n)
          // An escaped name reads back as the name.
          if (o.startsWith('"')) expect(JSON.parse(o)).toBe(n)
        }
        expect(new Set(out).size).toBe(names.length)
      }),
      { numRuns: 500 },
    )
  })

  it('escapes core’s own keys and hashes an escape longer than the service takes', () => {
    expect(reportClientName('\u0000ip:203.0.113.7')).toBe('"\\u0000ip:203.0.113.7"')
    expect(reportClientName('"quoted"')).toBe('"\\"quoted\\""')
    expect(reportClientName('plain')).toBe('plain')
    expect(reportClientName(`a${'\t'.repeat(127)}b`)).toMatch(/^sha256:[0-9a-f]{16}$/)
  })
})
