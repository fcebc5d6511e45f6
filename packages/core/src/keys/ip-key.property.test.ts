import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { ipKey } from './ip-key.js'

/** The reference: four dot-separated decimal octets of 0-255, none with a leading zero. */
function canonicalIpv4(s: string): boolean {
  const parts = s.split('.')
  return (
    parts.length === 4 &&
    parts.every((p) => /^[0-9]+$/.test(p) && String(Number(p)) === p && Number(p) <= 255)
  )
}

// Near misses as well as valid addresses: octets of 0-999 written with and without leading
// zeros, missing or extra parts, stray characters.
const octet = fc.oneof(
  fc.integer({ min: 0, max: 300 }).map(String),
  fc.integer({ min: 0, max: 999 }).map((n) => String(n).padStart(3, '0')),
  fc.constantFrom('', '0', '00', '255', '256', '1e2', ' 1', '+1', '-1', '0x1', '١'),
)
const dotted = fc
  .array(octet, { minLength: 2, maxLength: 5 })
  .chain((parts) => fc.constantFrom('.', '.', '.', ',', '..').map((sep) => parts.join(sep)))
const noise = fc.string({
  unit: fc.constantFrom('0', '1', '2', '5', '9', '.', ' ', 'a', '\n', ':'),
  maxLength: 17,
})

describe('ipKey of dotted IPv4', () => {
  it('property: an address is its own key exactly when it is canonical dotted IPv4', () => {
    fc.assert(
      fc.property(fc.oneof(dotted, noise), (s) => {
        // No "?" or "/" in the alphabets: every other key of a string differs from it.
        expect(ipKey(s) === s).toBe(s !== '' && canonicalIpv4(s))
      }),
      { numRuns: 5000 },
    )
  })

  it('a value that is not a string is never its own key, whatever it prints as', () => {
    for (const v of [['1.2.3.4'], { toString: () => '1.2.3.4' }]) {
      let key: unknown
      try {
        key = ipKey(v as unknown as string)
      } catch {
        key = undefined
      }
      expect(key).not.toBe(v)
    }
  })
})
