import { FloodgateError } from '../errors.js'
import type { RequestFacts } from '../request-facts.js'
import type { KeyPart, Rule } from '../rules/rule.js'
import { boundKey, KEY_MARKER } from './hash-key.js'
import { ipKey } from './ip-key.js'

/**
 * Turns a request into one part of a client key: a user id, a tenant, an API key.
 * Returning `undefined`, `null`, `''` or a number that is not finite (`NaN`, as
 * `Number(undefined)` answers) means the request has no such key. So does throwing or
 * answering anything else (an array, an object, a promise), which is also logged
 * (`FG_WRN_KEY_BUILDER_FAILED`): the rule's `fallbackKey` applies either way.
 */
export type KeyBuilder<Req = unknown> = (
  req: Req,
  facts: RequestFacts<Req>,
) => string | number | undefined | null

/**
 * Key builders registered by name, so rules (plain data) can refer to code: `user` serves the
 * `user` key part, any other name serves `custom:<name>`.
 */
export type KeyBuilders<Req = unknown> = Readonly<Record<string, KeyBuilder<Req> | undefined>>

/** A compiled key function: the client key for a rule, or undefined when the rule does not apply. */
export type KeyFn = (facts: RequestFacts) => string | undefined

/** One compiled key part. */
export type PartFn = (facts: RequestFacts) => string | undefined

// Fallback keys start with the marker and a letter; boundKey escapes every raw key that
// starts with the marker, so no IP, header value or builder output can equal one.
const FALLBACK_IP = `${KEY_MARKER}ip:`
const SHARED = `${KEY_MARKER}shared`
const SEP = '\u001f'

function text(v: string | number | undefined | null): string | undefined {
  if (v === undefined || v === null) return undefined
  if (typeof v === 'number') {
    // NaN is what `Number(undefined)` answers for every anonymous client: keyed "NaN", they
    // would all share one bucket. The infinities identify no one either.
    return Number.isFinite(v) ? String(v) : undefined
  }
  return v.length > 0 ? v : undefined
}

/**
 * Told when a key builder throws or answers something that is not a key (an array, an object,
 * a promise). The request is keyed as having no value for that part (the rule's `fallbackKey`
 * applies); this is how the failure is still heard.
 *
 * @param builder - the builder's registered name (`user`, or `tenant` for `custom:tenant`)
 * @param err - what the builder threw, or a TypeError naming what it answered
 * @param threw - whether it threw (rather than answered)
 */
export type KeyBuilderFailed = (builder: string, err: unknown, threw: boolean) => void

/**
 * A key builder's answer as a key part's value. An answer that is not a key would key every
 * client into one "[object …]" bucket, and refusing the request instead would let a client
 * that picks such an answer (`?key=a&key=b` makes `req.query.key` an array) pass unjudged:
 * it is no value, reported.
 */
function answerText(
  v: unknown,
  name: string,
  failed: KeyBuilderFailed | undefined,
): string | undefined {
  if (typeof v === 'string' || typeof v === 'number' || v === undefined || v === null) {
    return text(v)
  }
  failed?.(name, notAKey(v), false)
  return undefined
}

/** What a builder answered that is not a key, said; a promise's rejection is handled. */
function notAKey(v: unknown): TypeError {
  let what: string
  try {
    if (typeof (v as { then?: unknown }).then === 'function') {
      // A rejection would otherwise go unhandled and end the process.
      Promise.resolve(v).catch(() => undefined)
      what = 'a promise'
    } else {
      what = Array.isArray(v) ? 'an array' : v === null ? 'null' : `a ${typeof v}`
    }
  } catch {
    // A revoked Proxy throws on any look.
    what = 'an unreadable object'
  }
  return new TypeError(
    `answered ${what}; expected a string, a number or undefined (key builders are synchronous)`,
  )
}

/**
 * Compile one key part (`ip`, `header:<name>`, `user`, `custom:<name>`) into a function of the
 * request's facts; undefined when the request has no such value. A builder that throws or
 * answers something that is not a key gives no value, and `failed` is told.
 *
 * @throws FloodgateError FG_ERR_KEY_BUILDER_UNKNOWN when the part needs a builder that is not registered
 */
export function partFn<Req>(
  part: KeyPart,
  builders: KeyBuilders<Req>,
  ipv6Subnet: number,
  path: string,
  failed?: KeyBuilderFailed,
): PartFn {
  if (part === 'ip') {
    // A flood from one client repeats one address: remember the last one normalised.
    let lastIp: string | undefined
    let lastKey: string | undefined
    return (f) => {
      const ip = f.ip
      if (ip !== lastIp) {
        lastKey = ipKey(ip, ipv6Subnet)
        lastIp = ip
      }
      return lastKey
    }
  }
  if (part.startsWith('header:')) {
    const name = part.slice('header:'.length).toLowerCase()
    return (f) => {
      // Own properties only: an inherited `constructor` or polluted prototype is no header.
      const v = Object.hasOwn(f.headers, name) ? f.headers[name] : undefined
      return typeof v === 'string' ? text(v) : Array.isArray(v) ? text(v.join(',')) : undefined
    }
  }
  const name = part === 'user' ? 'user' : part.slice('custom:'.length)
  const builder = Object.hasOwn(builders, name) ? builders[name] : undefined
  if (typeof builder !== 'function') {
    throw new FloodgateError(
      'FG_ERR_KEY_BUILDER_UNKNOWN',
      `${path}: key "${part}" needs a key builder registered as keys.${name}`,
    )
  }
  return (f) => {
    let v: unknown
    try {
      v = builder(f.request as Req, f as RequestFacts<Req>)
    } catch (err) {
      // What the client sent can make a builder throw (a garbage token): a throw that let the
      // request pass unjudged would be a way around the rule of the client's choosing.
      failed?.(name, err, true)
      return undefined
    }
    return typeof v === 'string' ? (v.length > 0 ? v : undefined) : answerText(v, name, failed)
  }
}

/**
 * Compile one key part into a function that reads its raw value (not bounded or hashed), for
 * rules that look a value up rather than count by it (`tiers.by`).
 *
 * @param part - the key part
 * @param builders - registered key builders
 * @param ipv6Subnet - prefix IPv6 client addresses are grouped by
 * @param path - where the part sits, for error messages
 * @param failed - told when a builder throws or answers something that is not a key (the
 * request then has no value for the part)
 * @returns the value of the part for a request, or undefined when it has none
 * @throws FloodgateError FG_ERR_KEY_BUILDER_UNKNOWN when the part names a builder that is not registered
 */
export function compileKeyPart<Req>(
  part: KeyPart,
  builders: KeyBuilders<Req>,
  ipv6Subnet: number,
  path: string,
  failed?: KeyBuilderFailed,
): KeyFn {
  return partFn(part, builders, ipv6Subnet, path, failed)
}

/**
 * Compile a rule's key into one function, once per rules revision.
 *
 * @param rule - the rule whose `key` and `fallbackKey` to compile
 * @param builders - registered key builders
 * @param ipv6Subnet - prefix IPv6 client addresses are grouped by
 * @param path - where the rule sits, for error messages (`rules[2]`)
 * @param failed - told when a builder throws or answers something that is not a key; the
 * request then has no value for that part, and the rule's `fallbackKey` applies
 * @returns the key function
 * @throws FloodgateError FG_ERR_KEY_BUILDER_UNKNOWN when a part names a builder that is not registered
 */
export function compileKey<Req>(
  rule: Rule,
  builders: KeyBuilders<Req>,
  ipv6Subnet: number,
  path: string = `rule "${rule.id}"`,
  failed?: KeyBuilderFailed,
): KeyFn {
  const parts = rule.key.map((p) => partFn(p, builders, ipv6Subnet, `${path}.key`, failed))
  const fallback: KeyFn =
    rule.fallbackKey === 'skip'
      ? () => undefined
      : rule.fallbackKey === 'shared'
        ? () => SHARED
        : (f) => {
            const ip = ipKey(f.ip, ipv6Subnet)
            return ip === undefined ? SHARED : FALLBACK_IP + ip
          }
  if (parts.length === 1 && rule.key[0] === 'ip') {
    const ip = parts[0]!
    // An IP key is at most 65 characters and never starts with KEY_MARKER (see ipKey), so
    // boundKey would return it unchanged.
    return (f) => {
      const v = ip(f)
      return v === undefined ? fallback(f) : v
    }
  }
  if (parts.length === 1) {
    const only = parts[0]!
    return (f) => {
      const v = only(f)
      return v === undefined ? fallback(f) : boundKey(v)
    }
  }
  return (f) => {
    let key = ''
    for (let i = 0; i < parts.length; i++) {
      const v = parts[i]!(f)
      if (v === undefined) return fallback(f)
      // Escape the separator so two different tuples can never join into the same key.
      const safe =
        v.includes(SEP) || v.includes('\\') ? v.replaceAll('\\', '\\\\').replaceAll(SEP, '\\s') : v
      key = i === 0 ? safe : key + SEP + safe
    }
    return boundKey(key)
  }
}

/**
 * A client key given by hand (to `limiter.get`, `reset`, `penalty`, `reward`, `limit`): the
 * value of a one-part rule's key, or an object of part values named as the rule names them
 * (`{ ip: '203.0.113.7' }`, `{ user: 'u1', 'header:x-tenant': 'acme' }`).
 */
export type ClientKey = string | number | Readonly<Record<string, string | number | undefined>>

/**
 * One (non-address) part's value among the values given for a client, normalised as on a
 * request; undefined when `given` is not an object of parts or lacks it.
 *
 * @param given - The part values, or one part's value.
 * @param part - The part to read (`header:x-plan`, `user`, `custom:plan`).
 * @returns The value, or undefined.
 */
export function partFromKey(given: ClientKey, part: KeyPart): string | undefined {
  if (typeof given !== 'object') return undefined
  const raw = givenRaw(given, part)
  return raw === SPELLED_TWICE ? undefined : givenText(raw)
}

/** What {@link givenRaw} answers for a part given twice, in two spellings, with two values. */
const SPELLED_TWICE = Symbol('spelled twice')

/**
 * The value given for one part. Header names are case-insensitive and a rule may write
 * `header:X-Api-Key` (kept as `header:x-api-key`): a header part is read under any case of its
 * name, or `{ 'header:X-Api-Key': 'k1', ip }` would name the client's IP fallback instead of
 * the client. Two spellings giving two values name no one.
 */
function givenRaw(
  given: Readonly<Record<string, string | number | undefined>>,
  part: KeyPart,
): string | number | undefined | typeof SPELLED_TWICE {
  let raw = Object.hasOwn(given, part) ? given[part] : undefined
  if (!part.startsWith('header:')) return raw
  for (const name of Object.keys(given)) {
    // ASCII only: lower-cased, the Kelvin sign would pass for a `k`.
    if (name === part || name.toLowerCase() !== part || !/^[!-~]+$/.test(name)) continue
    const v = given[name]
    if (raw === undefined) raw = v
    else if (v !== undefined && givenText(v) !== givenText(raw)) return SPELLED_TWICE
  }
  return raw
}

/** A part's value given by hand, read as a request's would be (`NaN` is no value). */
function givenText(raw: unknown): string | undefined {
  return typeof raw === 'string' || typeof raw === 'number' ? text(raw) : undefined
}

/**
 * The stored key a request with these part values would get under `rule`: each part
 * normalised as on a request (an IPv6 address grouped by its subnet), the parts joined, the
 * result bounded. A missing part falls back to the client's IP when the rule says so
 * (`fallbackKey: 'ip'`) and `ip` is given. Undefined when the parts do not key the rule (a
 * part is missing with no fallback, or one value is given to a rule of several parts).
 *
 * @param rule - The rule whose key to build.
 * @param given - The part values, or the one part's value.
 * @param ipv6Subnet - The limiter's IPv6 grouping.
 * @returns The stored key, or undefined.
 */
export function keyFromParts(rule: Rule, given: ClientKey, ipv6Subnet: number): string | undefined {
  const values: (string | undefined)[] = []
  if (typeof given === 'string' || typeof given === 'number') {
    if (rule.key.length !== 1) return undefined
    values.push(rule.key[0] === 'ip' ? ipKey(String(given), ipv6Subnet) : givenText(given))
  } else {
    for (const part of rule.key) {
      const raw = givenRaw(given, part)
      if (raw === SPELLED_TWICE) return undefined
      values.push(
        part === 'ip'
          ? ipKey(raw === undefined ? undefined : String(raw), ipv6Subnet)
          : givenText(raw),
      )
    }
  }
  if (values.some((v) => v === undefined)) {
    // As on a request, a rule that falls back to the IP keys a client without the part by its
    // IP, when one is given. The shared bucket of `fallbackKey: 'shared'` is nobody's to reset.
    if (rule.fallbackKey !== 'ip' || typeof given !== 'object') return undefined
    const raw = Object.hasOwn(given, 'ip') ? given.ip : undefined
    const ip = ipKey(raw === undefined ? undefined : String(raw), ipv6Subnet)
    return ip === undefined ? undefined : FALLBACK_IP + ip
  }
  if (values.length === 1) return boundKey(values[0]!)
  let key = ''
  values.forEach((v, i) => {
    const safe =
      v!.includes(SEP) || v!.includes('\\')
        ? v!.replaceAll('\\', '\\\\').replaceAll(SEP, '\\s')
        : v!
    key = i === 0 ? safe : key + SEP + safe
  })
  return boundKey(key)
}
