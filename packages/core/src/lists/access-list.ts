import { BlockList, isIP } from 'node:net'
import { partFn, type KeyBuilderFailed, type KeyBuilders, type PartFn } from '../keys/build-key.js'
import { ipKey } from '../keys/ip-key.js'
import { checkObject, optionError, refusedOption } from '../options/checks.js'
import type { RequestFacts } from '../request-facts.js'
import { HEADER_VALUE_EXPECTED, isCarriedHeaderValue } from '../rules/header-value.js'
import type { KeyPart } from '../rules/rule.js'

/**
 * Clients named up front: by address (single addresses and CIDR ranges, IPv4 or IPv6) or by the
 * value of a key part. Used by `createLimiter`'s `allow` and `deny` options.
 *
 * @example
 * deny: { ips: ['203.0.113.0/24', '2001:db8:bad::/48'], keys: { 'header:x-api-key': ['leaked-key'] } }
 */
export interface AccessList {
  /**
   * Addresses (`'198.51.100.7'`, `'2001:db8::1'`) and CIDR ranges (`'198.51.100.0/24'`,
   * `'2001:db8::/32'`). An IPv4 entry also covers the IPv4-mapped and NAT64 (`64:ff9b::/96`) IPv6 spellings of its addresses
   * (`::ffff:198.51.100.7`), and the other way round.
   */
  readonly ips?: readonly string[] | undefined
  /**
   * Key values by key part, in the rules' key syntax: `header:<name>`, `user`, `custom:<name>`
   * (the last two read the limiter's `keys` builders). A request is listed when the part's value
   * equals one of the strings exactly.
   */
  readonly keys?: Readonly<Record<string, readonly string[]>> | undefined
}

const KEY_PART = /^(?:user|header:[A-Za-z0-9!#$%&'*+.^_`|~-]+|custom:[A-Za-z0-9_.-]+)$/

/** Most entries one list (or one key part's values) may hold in a rule. */
export const MAX_LIST_ENTRIES = 10_000

/** An address or CIDR range, read. */
export interface ListRange {
  readonly address: string
  readonly prefix: number
  readonly family: 'ipv4' | 'ipv6'
}

/** Why an entry is not an address or range: what was expected, and whether the prefix is at fault. */
export interface RangeProblem {
  readonly expected: string
  /** Set when the address is fine but the prefix length is not: what was written, the most. */
  readonly prefix?: { readonly bits: string; readonly max: number } | undefined
}

/**
 * Read one `ips` entry: an IPv4 or IPv6 address, or a CIDR range of either. The one reading of
 * list entries, for the limiter's options and for rules.
 *
 * @param entry - the entry as written
 * @returns the range, or what is wrong with it
 */
export function readRange(entry: unknown): ListRange | RangeProblem {
  const expected = "an IP address or CIDR range ('192.0.2.0/24', '2001:db8::/32')"
  if (typeof entry !== 'string') return { expected }
  const slash = entry.indexOf('/')
  const address = slash < 0 ? entry : entry.slice(0, slash)
  const version = isIP(address)
  if (version === 0) return { expected }
  const family = version === 4 ? 'ipv4' : 'ipv6'
  const max = version === 4 ? 32 : 128
  let prefix = max
  if (slash >= 0) {
    const bits = entry.slice(slash + 1)
    prefix = /^\d{1,3}$/.test(bits) ? Number(bits) : NaN
    if (!(prefix >= 0 && prefix <= max)) {
      return { expected: `a prefix length from 0 to ${max} after the '/'`, prefix: { bits, max } }
    }
  }
  // A request from an IPv4 client written as IPv6 (::ffff:a.b.c.d, or 64:ff9b::a.b.c.d from a
  // NAT64 translator) is read as IPv4 (ipKey), so an entry within those /96s is read so too.
  if (family === 'ipv6' && prefix >= 96) {
    const v4 = ipKey(address, 128)
    if (v4 !== undefined && isIP(v4) === 4)
      return { address: v4, prefix: prefix - 96, family: 'ipv4' }
  }
  return { address, prefix, family }
}

function parseRange(entry: unknown, where: string): ListRange {
  const r = readRange(entry)
  if ('address' in r) return r
  if (r.prefix !== undefined) {
    throw refusedOption(
      where,
      `prefix length must be a whole number from 0 to ${r.prefix.max}, got "${r.prefix.bits}"`,
    )
  }
  throw optionError(where, r.expected, entry)
}

/** An address list and key values, validated: what {@link CompiledAccessList.build} compiles. */
export interface AccessListData {
  readonly ips?: readonly string[] | undefined
  readonly keys?: Readonly<Record<string, readonly string[]>> | undefined
}

/**
 * The address as node:net reads it: brackets, ports and zone ids gone, IPv4-mapped IPv6 as
 * IPv4 (the same normalisation the `ip` key part uses, at full length).
 */
function canonicalAddress(
  ip: string | undefined,
): { address: string; family: 'ipv4' | 'ipv6' } | undefined {
  const key = ipKey(ip, 128)
  if (key === undefined || key.startsWith('?')) return undefined
  if (key.endsWith('/128')) return { address: key.slice(0, -4), family: 'ipv6' }
  return { address: key, family: 'ipv4' }
}

/** A compiled {@link AccessList}: answers whether a request's facts are on it. */
export class CompiledAccessList {
  private readonly blocks: BlockList | undefined
  private readonly parts: ReadonlyArray<readonly [PartFn, ReadonlySet<string>]>

  private constructor(
    blocks: BlockList | undefined,
    parts: Array<readonly [PartFn, ReadonlySet<string>]>,
  ) {
    this.blocks = blocks
    this.parts = parts
  }

  /**
   * Validate and compile a list given as an option, at startup.
   *
   * @param name - the option's name, for messages (`deny`)
   * @param list - the list as given
   * @param builders - the limiter's key builders
   * @param failed - told when a builder throws or answers something that is not a key (the
   * request then has no value for that part, so that part does not list it)
   * @returns the compiled list, or undefined when none was given
   * @throws OptionsError naming the bad entry; FloodgateError FG_ERR_KEY_BUILDER_UNKNOWN when a
   * key part needs a builder that is not registered
   */
  static compile<Req>(
    name: string,
    list: unknown,
    builders: KeyBuilders<Req>,
    failed?: KeyBuilderFailed,
  ): CompiledAccessList | undefined {
    if (list === undefined) return undefined
    checkObject(name, list)
    const { ips, keys, ...rest } = list as AccessList
    for (const k of Object.keys(rest)) {
      throw refusedOption(`${name}.${k}`, 'unknown setting (known: ips, keys)')
    }
    if (ips !== undefined && !Array.isArray(ips)) {
      throw optionError(`${name}.ips`, 'an array of addresses or CIDR ranges', ips)
    }
    ips?.forEach((entry: unknown, i) => parseRange(entry, `${name}.ips[${i}]`))
    if (keys !== undefined) {
      checkObject(`${name}.keys`, keys)
      for (const [part, values] of Object.entries(keys)) {
        const where = `${name}.keys["${part}"]`
        if (!KEY_PART.test(part)) {
          throw refusedOption(
            where,
            part === 'ip'
              ? `addresses go in ${name}.ips`
              : "expected a key part: 'user', 'header:<name>' or 'custom:<name>'",
          )
        }
        if (!Array.isArray(values) || !values.every((v) => typeof v === 'string' && v !== '')) {
          throw optionError(where, 'an array of non-empty strings', values)
        }
        if (part.startsWith('header:')) {
          // An entry no request's header can equal would never name the client it was put there for.
          const i = values.findIndex((v: string) => !isCarriedHeaderValue(v))
          if (i !== -1) throw optionError(`${where}[${i}]`, HEADER_VALUE_EXPECTED, values[i])
        }
      }
    }
    return CompiledAccessList.build({ ips, keys }, builders, name, failed)
  }

  /**
   * Compile a list already validated (a rule's `deny` or `allow`, checked by the rule schema).
   *
   * @param list - the addresses and key values
   * @param builders - the limiter's key builders
   * @param where - where the list sits, for messages (`rules[2].deny`)
   * @param failed - told when a builder throws or answers something that is not a key
   * @returns the compiled list
   * @throws FloodgateError FG_ERR_KEY_BUILDER_UNKNOWN when a key part needs a builder that is
   * not registered
   */
  static build<Req>(
    list: AccessListData,
    builders: KeyBuilders<Req>,
    where: string,
    failed?: KeyBuilderFailed,
  ): CompiledAccessList {
    let blocks: BlockList | undefined
    if (list.ips !== undefined) {
      blocks = new BlockList()
      list.ips.forEach((entry, i) => {
        const { address, prefix, family } = parseRange(entry, `${where}.ips[${i}]`)
        if ((family === 'ipv4' && prefix === 32) || (family === 'ipv6' && prefix === 128)) {
          blocks!.addAddress(address, family)
        } else {
          blocks!.addSubnet(address, prefix, family)
        }
      })
    }
    const parts: Array<readonly [PartFn, ReadonlySet<string>]> = []
    for (const [part, values] of Object.entries(list.keys ?? {})) {
      const at = `${where}.keys["${part}"]`
      parts.push([partFn(part as KeyPart, builders, 128, at, failed), new Set(values)])
    }
    return new CompiledAccessList(blocks, parts)
  }

  /**
   * Whether the request is on the list.
   *
   * @param facts - the request's facts
   * @returns true when its address falls in a listed range or a key part has a listed value
   */
  has(facts: RequestFacts): boolean {
    if (this.blocks !== undefined) {
      const a = canonicalAddress(facts.ip)
      if (a !== undefined && this.blocks.check(a.address, a.family)) return true
    }
    for (const [fn, values] of this.parts) {
      const v = fn(facts)
      if (v !== undefined && values.has(v)) return true
    }
    return false
  }
}
