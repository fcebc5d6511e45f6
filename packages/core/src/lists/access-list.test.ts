import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import type { RequestFacts } from '../request-facts.js'
import { CompiledAccessList } from './access-list.js'

const facts = (ip: string | undefined, headers: Record<string, string> = {}): RequestFacts => ({
  method: 'GET',
  path: '/',
  ip,
  headers,
})

const list = (ips: string[]) => CompiledAccessList.compile('deny', { ips }, {})!

// ---- a reference model: addresses as integers, a range as its first `prefix` bits ----------

const v4 = fc.tuple(
  fc.integer({ min: 0, max: 255 }),
  fc.integer({ min: 0, max: 255 }),
  fc.integer({ min: 0, max: 255 }),
  fc.integer({ min: 0, max: 255 }),
)
type V4 = [number, number, number, number]
const v4Int = (a: V4): bigint => BigInt(((a[0] << 24) | (a[1] << 16) | (a[2] << 8) | a[3]) >>> 0)
const dotted = (a: V4): string => a.join('.')
const hex16 = (a: number, b: number) => ((a << 8) | b).toString(16)

/** Every way a client's IPv4 address may reach the limiter. */
function v4Spellings(a: V4): string[] {
  return [
    dotted(a),
    `::ffff:${dotted(a)}`,
    `::FFFF:${dotted(a)}`,
    `0:0:0:0:0:ffff:${dotted(a)}`,
    `::ffff:${hex16(a[0], a[1])}:${hex16(a[2], a[3])}`,
    `[::ffff:${dotted(a)}]`,
    `${dotted(a)}:8080`,
    // From a NAT64 translator (the well-known prefix 64:ff9b::/96).
    `64:ff9b::${dotted(a)}`,
    `[64:FF9B::${hex16(a[0], a[1])}:${hex16(a[2], a[3])}]:443`,
  ]
}

/** An IPv4 client written as IPv6: IPv4-mapped, or in the NAT64 well-known prefix. */
const isV4Client = (g: number[]) =>
  (g.slice(0, 5).every((x) => x === 0) && g[5] === 0xffff) ||
  (g[0] === 0x64 && g[1] === 0xff9b && g.slice(2, 6).every((x) => x === 0))

const v6 = fc.array(fc.integer({ min: 0, max: 0xffff }), { minLength: 8, maxLength: 8 })
const v6Int = (g: number[]): bigint => g.reduce((acc, x) => (acc << 16n) | BigInt(x), 0n)
const full = (g: number[]) => g.map((x) => x.toString(16)).join(':')

/** The compressed form: the longest run of zero groups (two or more) as `::`. */
function compressed(g: number[]): string {
  let best = -1
  let bestLen = 1
  for (let i = 0; i < 8;) {
    if (g[i] !== 0) {
      i++
      continue
    }
    let j = i
    while (j < 8 && g[j] === 0) j++
    if (j - i > bestLen) [best, bestLen] = [i, j - i]
    i = j
  }
  const h = g.map((x) => x.toString(16))
  if (best < 0) return h.join(':')
  return `${h.slice(0, best).join(':')}::${h.slice(best + bestLen).join(':')}`
}

function v6Spellings(g: number[]): string[] {
  return [
    full(g),
    compressed(g),
    compressed(g).toUpperCase(),
    g.map((x) => x.toString(16).padStart(4, '0')).join(':'),
    `[${compressed(g)}]`,
  ]
}

const inRange = (x: bigint, base: bigint, prefix: number, bits: number): boolean =>
  x >> BigInt(bits - prefix) === base >> BigInt(bits - prefix)

describe('access lists: addresses and CIDR ranges', () => {
  it('property: an IPv4 range holds exactly the addresses the reference model says, in every spelling', () => {
    fc.assert(
      fc.property(v4, fc.integer({ min: 0, max: 32 }), v4, (base, prefix, client) => {
        const l = list([`${dotted(base)}/${prefix}`])
        const want = inRange(v4Int(client), v4Int(base), prefix, 32)
        for (const spelling of v4Spellings(client)) {
          expect(l.has(facts(spelling)), `${spelling} in ${dotted(base)}/${prefix}`).toBe(want)
        }
      }),
      { numRuns: 300 },
    )
  })

  it('property: an IPv4 range written as IPv4-mapped or NAT64 IPv6 covers the IPv4 spellings too', () => {
    fc.assert(
      fc.property(
        v4,
        fc.integer({ min: 0, max: 32 }),
        v4,
        fc.constantFrom('::ffff:', '64:ff9b::'),
        (base, prefix, client, within) => {
          const l = list([`${within}${dotted(base)}/${96 + prefix}`])
          const want = inRange(v4Int(client), v4Int(base), prefix, 32)
          for (const spelling of v4Spellings(client)) {
            expect(l.has(facts(spelling)), spelling).toBe(want)
          }
        },
      ),
      { numRuns: 200 },
    )
  })

  it('property: an IPv6 range holds exactly the addresses the reference model says, in every spelling', () => {
    // Clients near the base as often as far from it, so both answers are exercised.
    const near = fc.tuple(v6, fc.integer({ min: 0, max: 128 }), v6, fc.boolean())
    fc.assert(
      fc.property(near, ([base, prefix, other, same]) => {
        const client = same ? base.map((x, i) => (i < 4 ? x : other[i]!)) : other
        // IPv4-mapped and NAT64 addresses are IPv4 clients; the IPv4 properties cover them.
        fc.pre(!isV4Client(client))
        fc.pre(!isV4Client(base))
        const l = list([`${compressed(base)}/${prefix}`])
        const want = inRange(v6Int(client), v6Int(base), prefix, 128)
        for (const spelling of v6Spellings(client)) {
          expect(l.has(facts(spelling)), `${spelling} in ${compressed(base)}/${prefix}`).toBe(want)
        }
      }),
      { numRuns: 300 },
    )
  })

  it('lists single addresses, and never lists a request without an address or with garbage', () => {
    const l = list(['192.0.2.1', '2001:db8::1'])
    expect(l.has(facts('192.0.2.1'))).toBe(true)
    expect(l.has(facts('192.0.2.2'))).toBe(false)
    expect(l.has(facts('2001:0db8:0:0:0:0:0:0001'))).toBe(true)
    expect(l.has(facts('2001:db8::2'))).toBe(false)
    for (const odd of [undefined, '', 'unknown', '999.1.1.1', '::ffff:999.0.0.1', '[2001:db8::1']) {
      expect(l.has(facts(odd)), String(odd)).toBe(false)
    }
  })

  it('lists key values: a header, a user from its key builder', () => {
    const l = CompiledAccessList.compile(
      'allow',
      { keys: { 'header:X-Api-Key': ['internal'], user: ['ops'] } },
      { user: (req: { user?: string } | undefined) => req?.user },
    )!
    expect(l.has(facts('198.51.100.1', { 'x-api-key': 'internal' }))).toBe(true)
    expect(l.has(facts('198.51.100.1', { 'x-api-key': 'other' }))).toBe(false)
    expect(l.has({ ...facts('198.51.100.1'), request: { user: 'ops' } })).toBe(true)
    expect(l.has({ ...facts('198.51.100.1'), request: { user: 'dev' } })).toBe(false)
  })

  it.each([
    [
      { ips: '10.0.0.0/8' },
      /deny\.ips: expected an array of addresses or CIDR ranges, got "10\.0\.0\.0\/8"/,
    ],
    [
      { ips: ['10.0.0.0/33'] },
      /deny\.ips\[0\]: prefix length must be a whole number from 0 to 32, got "33"/,
    ],
    [
      { ips: ['2001:db8::/129'] },
      /deny\.ips\[0\]: prefix length must be a whole number from 0 to 128/,
    ],
    [
      { ips: ['10.0.0.0/8', 'example.com'] },
      /deny\.ips\[1\]: expected an IP address or CIDR range .*got "example\.com"/,
    ],
    [{ ips: ['10.0.0.0/-1'] }, /deny\.ips\[0\]: prefix length/],
    [{ keys: { ip: ['1.2.3.4'] } }, /deny\.keys\["ip"\]: addresses go in deny\.ips/],
    [{ keys: { 'query:x': ['a'] } }, /deny\.keys\["query:x"\]: expected a key part/],
    [
      { keys: { 'header:x-api-key': 'k' } },
      /deny\.keys\["header:x-api-key"\]: expected an array of non-empty strings, got "k"/,
    ],
    [{ keys: { 'header:x-api-key': [''] } }, /expected an array of non-empty strings/],
    [{ keys: { user: ['u'] } }, /needs a key builder registered as keys\.user/],
    [{ ipz: [] }, /deny\.ipz: unknown setting \(known: ips, keys\)/],
    [['10.0.0.0/8'], /deny: expected an object, got an array/],
  ])('refuses %o at startup, naming the entry', (value, message) => {
    expect(() => CompiledAccessList.compile('deny', value, {})).toThrow(message)
  })
})
