/**
 * Client IP → limiter key.
 *
 * - IPv4 stays as it is.
 * - IPv4-mapped IPv6 (`::ffff:1.2.3.4`, also written `::ffff:102:304`) keys as the IPv4
 *   address: masking it as IPv6 would put every IPv4 client in one bucket (GHSA-46wh-pxpv-q5gq).
 * - Other IPv6 addresses are masked to a prefix (default /64): one subscriber usually holds a
 *   whole /64, so keying per /128 lets a client rotate addresses without limit.
 * - Every notation of one address (upper case, zero padding, `::` compression, a zone id, a
 *   port) gives the same key.
 */

const IPV4 = /^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})$/
const IPV4_WITH_PORT = /^(\d{1,3}(?:\.\d{1,3}){3}):\d{1,5}$/

/**
 * Dotted IPv4 in canonical form: four octets of 0-255, none with a leading zero; such an
 * address is its own key. A regular expression, because V8's compiled matcher reads a string
 * more cheaply than a scan by `charCodeAt`, which checks the string's representation again for
 * every character (about 410 against 550 instructions for a 12-character address, callgrind).
 */
const CANONICAL_IPV4 =
  /^(?:(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)\.){3}(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)$/

/** Parse dotted IPv4 into a 32-bit number, or -1 when it is not one. */
function parseIpv4(s: string): number {
  const m = IPV4.exec(s)
  if (!m) return -1
  let n = 0
  for (let i = 1; i <= 4; i++) {
    const part = m[i]!
    // Leading zeros are ambiguous (octal in some parsers): refuse rather than guess.
    if (part.length > 1 && part.startsWith('0')) return -1
    const v = Number(part)
    if (v > 255) return -1
    n = n * 256 + v
  }
  return n
}

function formatIpv4(n: number): string {
  return `${(n >>> 24) & 255}.${(n >>> 16) & 255}.${(n >>> 8) & 255}.${n & 255}`
}

/** Parse an IPv6 address into eight 16-bit groups, or undefined when it is not one. */
function parseIpv6(input: string): number[] | undefined {
  let s = input
  const zone = s.indexOf('%')
  if (zone >= 0) s = s.slice(0, zone)
  if (s.length === 0 || s.length > 45) return undefined
  let tail: number[] = []
  // An embedded IPv4 in the last 32 bits: `::ffff:1.2.3.4`, `64:ff9b::1.2.3.4`.
  const lastColon = s.lastIndexOf(':')
  if (s.indexOf('.', lastColon) > 0) {
    const v4 = parseIpv4(s.slice(lastColon + 1))
    if (v4 < 0) return undefined
    tail = [v4 >>> 16, v4 & 0xffff]
    // Keep a `::` that precedes the IPv4 part; drop a single separating colon.
    const prefix = s.slice(0, lastColon + 1)
    s = prefix.endsWith('::') ? prefix : prefix.slice(0, -1)
  }
  const halves = s.split('::')
  if (halves.length > 2) return undefined
  const parse = (part: string): number[] | undefined => {
    if (part === '') return []
    const groups: number[] = []
    for (const g of part.split(':')) {
      if (g.length === 0 || g.length > 4 || !/^[0-9a-fA-F]+$/.test(g)) return undefined
      groups.push(parseInt(g, 16))
    }
    return groups
  }
  const head = parse(halves[0]!)
  const rest = halves.length === 2 ? parse(halves[1]!) : []
  if (!head || !rest) return undefined
  const explicit = head.length + rest.length + tail.length
  if (halves.length === 1) {
    if (explicit !== 8) return undefined
    return [...head, ...tail]
  }
  if (explicit > 7) return undefined
  return [...head, ...new Array<number>(8 - explicit).fill(0), ...rest, ...tail]
}

/**
 * Normalise a client IP into the key the `ip` key part uses.
 *
 * @param ip - the address as the framework resolved it
 * @param ipv6Subnet - prefix length IPv6 addresses are masked to (1-128)
 * @returns the key, or undefined when there is no address
 */
export function ipKey(ip: string | undefined, ipv6Subnet: number = 64): string | undefined {
  if (!ip) return undefined
  // Fast path: the common dotted IPv4 form needs no work.
  // A string only: test() would read anything else through its toString.
  if (typeof ip === 'string' && CANONICAL_IPV4.test(ip)) return ip
  if (ip.indexOf(':') < 0) return invalidKey(ip)
  const withPort = IPV4_WITH_PORT.exec(ip)
  if (withPort) return ipKey(withPort[1], ipv6Subnet)
  let s = ip
  if (s.startsWith('[')) {
    const end = s.indexOf(']')
    if (end < 0) return invalidKey(ip)
    s = s.slice(1, end)
  }
  const g = parseIpv6(s)
  if (!g) return invalidKey(ip)
  // An IPv4 client written as IPv6 is keyed as that IPv4 address, or every IPv4 client would
  // share one IPv6 prefix: IPv4-mapped (::ffff:a.b.c.d: 80 zero bits, then ffff), and the
  // NAT64 well-known prefix (64:ff9b::/96, RFC 6052) that a translator in front of an
  // IPv6-only service writes every IPv4 client into.
  const mapped = g[0] === 0 && g[1] === 0 && g[5] === 0xffff
  const nat64 = g[0] === 0x64 && g[1] === 0xff9b && g[5] === 0
  if ((mapped || nat64) && g[2] === 0 && g[3] === 0 && g[4] === 0) {
    return formatIpv4(((g[6]! << 16) | g[7]!) >>> 0)
  }
  const prefix = Math.max(1, Math.min(128, Math.trunc(ipv6Subnet)))
  const groups = Math.ceil(prefix / 16)
  const out: string[] = []
  for (let i = 0; i < groups; i++) {
    const bits = Math.min(16, prefix - i * 16)
    const mask = (0xffff << (16 - bits)) & 0xffff
    out.push((g[i]! & mask).toString(16))
  }
  return `${out.join(':')}/${prefix}`
}

/** Something that is not an IP address still gets a stable, bounded, recognisable key. */
function invalidKey(ip: string): string {
  return `?${ip.length > 64 ? ip.slice(0, 64) : ip}`
}
