import { MAX_LIST_ENTRIES, readRange } from '../lists/access-list.js'
import type { KeyPart, RuleAccessList, RuleDenyList } from './rule.js'
import { HEADER_VALUE_EXPECTED, isCarriedHeaderValue } from './header-value.js'
import { keyPart } from './schema-fields.js'
import { BAD, type Bad, type Checker } from './schema-issues.js'
import { checkFields, isObject, oneOf, type Field } from './schema-object.js'
import { SpelledOnce } from './spelled-once.js'

// The checks of a rule's `deny` and `allow` lists, each with the message its errors carry.

/** What each list field expects, phrased to follow "expected" in an error message. */
export const LIST_E = {
  deny: 'an object with ips (addresses and CIDR ranges) and/or keys (key part to values), and optionally status',
  allow: 'an object with ips (addresses and CIDR ranges) and/or keys (key part to values)',
  ips: `a list of at most ${MAX_LIST_ENTRIES} IP addresses and CIDR ranges` as string,
  keys: "an object mapping key parts ('user', 'header:<name>', 'custom:<name>') to lists of values",
  listKeyPart: "'user', 'header:<name>' or 'custom:<name>' (addresses go in ips)",
  values: `a list of at most ${MAX_LIST_ENTRIES} non-empty strings` as string,
  denyStatus: '403, 404, 429 or 503',
} as const

export const DENY_STATUSES = [403, 404, 429, 503] as const

const ips: Field<readonly string[]> = (value, c) => {
  if (!Array.isArray(value) || value.length > MAX_LIST_ENTRIES) return c.expected(LIST_E.ips, value)
  const before = c.count
  value.forEach((entry: unknown, i) => {
    const r = readRange(entry)
    if (!('address' in r)) c.expected(r.expected, entry, [i])
  })
  return c.count === before ? Object.freeze([...(value as string[])]) : BAD
}

/** The values listed for one key part; a header part's must be values a request can carry. */
const values = (value: unknown, c: Checker, header: boolean): readonly string[] | Bad => {
  if (!Array.isArray(value) || value.length > MAX_LIST_ENTRIES) {
    return c.expected(LIST_E.values, value)
  }
  const before = c.count
  value.forEach((v: unknown, i) => {
    if (typeof v !== 'string' || v === '' || v.length > 1024) {
      c.expected('a non-empty string of at most 1024 characters', v, [i])
    } else if (header && !isCarriedHeaderValue(v)) {
      // An entry no request's header can equal would never name the client it was put there for.
      c.expected(HEADER_VALUE_EXPECTED, v, [i])
    }
  })
  return c.count === before ? Object.freeze([...(value as string[])]) : BAD
}

const keys: Field<Readonly<Record<string, readonly string[]>>> = (value, c) => {
  if (!isObject(value)) return c.expected(LIST_E.keys, value)
  const before = c.count
  // No prototype: a part is a plain entry whatever its name.
  const out = Object.create(null) as Record<string, readonly string[]>
  const once = new SpelledOnce(c, 'each key part once, in any case')
  for (const name of Object.keys(value)) {
    const part: KeyPart | undefined =
      name === 'ip' ? undefined : keyPart(name, c.at(name), [], LIST_E.listKeyPart)
    if (name === 'ip') c.expected(LIST_E.listKeyPart, name, [name])
    const listed = values(value[name], c.at(name), part?.startsWith('header:') === true)
    if (part !== undefined && once.first(part, name) && listed !== BAD) out[part] = listed
  }
  return c.count === before ? Object.freeze(out) : BAD
}

const allowFields = { ips, keys } as const
const denyFields = { ips, keys, status: oneOf(DENY_STATUSES, LIST_E.denyStatus) } as const

function list(
  value: unknown,
  c: Checker,
  what: string,
  withStatus: boolean,
): (RuleAccessList & { status?: RuleDenyList['status'] | undefined }) | Bad {
  if (!isObject(value)) return c.expected(what, value)
  const { fields, ok } = checkFields(value, withStatus ? denyFields : allowFields, c)
  if (!ok) return BAD
  if (fields.ips === undefined && fields.keys === undefined) return c.expected(what, value)
  return {
    ips: fields.ips ?? Object.freeze([]),
    keys: fields.keys ?? Object.freeze({}),
    status: 'status' in fields ? (fields.status as RuleDenyList['status'] | undefined) : undefined,
  }
}

/** `deny: { ips?, keys?, status? }`: clients refused before any rule counts them. */
export const deny: Field<RuleDenyList> = (value, c) => {
  const l = list(value, c, LIST_E.deny, true)
  if (l === BAD) return BAD
  return Object.freeze({ ips: l.ips, keys: l.keys, status: l.status ?? 403 })
}

/** `allow: { ips?, keys? }`: clients the rule does not count. */
export const allow: Field<RuleAccessList> = (value, c) => {
  const l = list(value, c, LIST_E.allow, false)
  if (l === BAD) return BAD
  return Object.freeze({ ips: l.ips, keys: l.keys })
}
