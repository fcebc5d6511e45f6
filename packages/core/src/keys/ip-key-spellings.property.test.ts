import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { ipKey } from './ip-key.js'

/** An address: eight 16-bit groups. */
type Groups = readonly number[]

/**
 * An IPv4 client written as IPv6: IPv4-mapped (`::ffff:a.b.c.d`) or translated into the NAT64
 * well-known prefix (`64:ff9b::a.b.c.d`, RFC 6052), where the last 32 bits are the client.
 */
const isMapped = (g: Groups) =>
  (g.slice(0, 5).every((x) => x === 0) && g[5] === 0xffff) ||
  (g[0] === 0x64 && g[1] === 0xff9b && g.slice(2, 6).every((x) => x === 0))

/** The model: who an address is, under a /prefix grouping of IPv6. */
function identity(g: Groups, prefix: number): string {
  if (isMapped(g)) return `v4:${g[6]! * 65536 + g[7]!}`
  let n = 0n
  for (const x of g) n = (n << 16n) | BigInt(x)
  return `v6:${n >> BigInt(128 - prefix)}`
}

const hex = (x: number, pad: number, upper: boolean) => {
  const s = x.toString(16).padStart(pad, '0')
  return upper ? s.toUpperCase() : s
}

/**
 * One spelling of `g`: padding, case, a `::` over any run of zero groups, a dotted tail, a zone
 * id, brackets and a port; an IPv4-mapped address also as dotted IPv4, with or without a port.
 */
const spelling = (g: Groups): fc.Arbitrary<string> =>
  fc
    .record({
      pads: fc.array(fc.integer({ min: 1, max: 4 }), { minLength: 8, maxLength: 8 }),
      upper: fc.boolean(),
      cut: fc.nat(),
      compress: fc.boolean(),
      dotted: fc.boolean(),
      zone: fc.boolean(),
      port: fc.boolean(),
    })
    .map((o) => {
      const words = g.map((x, i) => hex(x, o.pads[i]!, o.upper))
      const dotted = o.dotted && (isMapped(g) || o.cut % 2 === 0)
      let tail: string[] = []
      let head = words
      if (dotted) {
        tail = [`${g[6]! >> 8}.${g[6]! & 255}.${g[7]! >> 8}.${g[7]! & 255}`]
        head = words.slice(0, 6)
      }
      // Runs of zero groups in the head: compress one of them.
      const runs: [number, number][] = []
      for (let i = 0; i < head.length; i++) {
        if (g[i] !== 0) continue
        let j = i
        while (j < head.length && g[j] === 0) j++
        for (let a = i; a < j; a++) for (let b = a + 1; b <= j; b++) runs.push([a, b])
        i = j
      }
      let text: string
      if (o.compress && runs.length > 0) {
        const [a, b] = runs[o.cut % runs.length]!
        const left = head.slice(0, a).join(':')
        const right = [...head.slice(b), ...tail].join(':')
        text = `${left}::${right}`
      } else {
        text = [...head, ...tail].join(':')
      }
      if (isMapped(g) && o.cut % 3 === 0) {
        // The address as IPv4, with or without a port.
        const v4 = `${g[6]! >> 8}.${g[6]! & 255}.${g[7]! >> 8}.${g[7]! & 255}`
        return o.port ? `${v4}:8080` : v4
      }
      if (o.zone) text += '%eth0'
      return o.port ? `[${text}]:443` : text
    })

const group = fc.oneof(fc.constant(0), fc.constant(0xffff), fc.integer({ min: 0, max: 0xffff }))
const v6 = fc.array(group, { minLength: 8, maxLength: 8 })
const v4 = fc
  .tuple(
    fc.integer({ min: 0, max: 0xffff }),
    fc.integer({ min: 0, max: 0xffff }),
    fc.constantFrom([0, 0, 0, 0, 0, 0xffff], [0x64, 0xff9b, 0, 0, 0, 0]),
  )
  .map(([a, b, prefix]) => [...prefix, a, b])
const address = fc.oneof(v6, v4)

describe('ipKey over spellings', () => {
  it('property: constant on the spellings of one address, injective on identities (model)', () => {
    fc.assert(
      fc.property(
        address.chain((g) => fc.tuple(fc.constant(g), spelling(g), spelling(g))),
        address.chain((g) => fc.tuple(fc.constant(g), spelling(g))),
        fc.constantFrom(48, 56, 64, 127, 128),
        ([g, s1, s2], [h, t], prefix) => {
          const k1 = ipKey(s1, prefix)
          expect(k1).toBe(ipKey(s2, prefix))
          expect(k1?.startsWith('?')).toBe(false)
          expect(k1 === ipKey(t, prefix)).toBe(identity(g, prefix) === identity(h, prefix))
        },
      ),
      { numRuns: 5000 },
    )
  })
})
