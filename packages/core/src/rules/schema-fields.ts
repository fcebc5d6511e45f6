import { durationMs } from '../duration.js'
import { RULE_ALGORITHM_NAMES } from './algorithm-catalog.js'
import { HEADER_VALUE_EXPECTED, isCarriedHeaderValue } from './header-value.js'
import { checkPathPattern } from './path-pattern.js'
import type { CountMode, KeyPart, OverLimit, RuleBan, RuleMatch } from './rule.js'
import { BAD, type Bad, type Checker } from './schema-issues.js'
import { checkFields, isObject, oneOf, stringOrList, type Field } from './schema-object.js'
import { SpelledOnce } from './spelled-once.js'

// The checks a rule's fields go through, each with the message its errors carry.

/** The longest duration a rule may use: `setTimeout` overflows above 2^31-1 ms and would fire at once. */
export const MAX_DURATION_MS: number = 2 ** 31 - 1

const MAX_KEY_PARTS = 8
/** The most refusals a ban may count: each is a timestamp kept per client while it counts. */
export const MAX_BAN_AFTER = 1000
export const ID: RegExp = /^[A-Za-z0-9._-]{1,64}$/
/**
 * A rule id: an {@link ID} that is also a path segment of the rules service's URLs, so never
 * `.` or `..`, which every URL parser removes from a path as a dot segment (such a rule could
 * be created but never read, changed or deleted on its own).
 */
export const RULE_ID: RegExp = /^(?!\.\.?$)[A-Za-z0-9._-]{1,64}$/
const METHOD = /^[A-Za-z]{1,20}$/
// RFC 9110 token characters: the only characters a header name may hold.
const HEADER_NAME = /^[A-Za-z0-9!#$%&'*+.^_`|~-]{1,128}$/
const CUSTOM_KEY = /^custom:[A-Za-z0-9._-]{1,64}$/
const HOST_LABEL = '[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?'
// Case-insensitive, and tested on the host as written: lower-casing first would turn the
// Kelvin sign (U+212A) into an ASCII 'k' and accept a host the rule's author never wrote.
const HOST = new RegExp(`^(?:\\*\\.)?${HOST_LABEL}(?:\\.${HOST_LABEL})*$`, 'i')
const RATE = /^(\d{1,15})\/(.+)$/

// What each field expects, phrased to follow "expected" in an error message.
export const E = {
  rules: 'a list of rules',
  rule: 'a rule object',
  id: "an id of 1-64 letters, digits, '.', '_' or '-', other than '.' and '..'",
  description: 'a string',
  match:
    "a string like 'POST /export' or '/api/**', an object with methods, paths, headers, hosts, or false (no HTTP request: a rule used through limiter.limit())",
  method: 'an HTTP method like GET',
  methods: 'an HTTP method or a list of them',
  path: "a path pattern like '/users/:id' or '/api/**'",
  paths: 'a path pattern or a list of them',
  headers: 'an object mapping header names to a value, or to true for presence',
  headerValue: 'a string to compare with, or true for presence',
  host: "a host name like 'api.example.com' or '*.example.com'",
  hosts: 'a host name or a list of them',
  keyPart: "'ip', 'user', 'header:<name>' or 'custom:<name>'",
  key: "'ip', 'user', 'header:<name>', 'custom:<name>' or a list of them",
  fallbackKey: "'ip', 'skip' or 'shared'",
  posInt: 'a positive integer',
  duration:
    "a duration like '500ms', '10s', '1m', '1h', '1d' or a positive whole number of milliseconds",
  rate: "a rate like '10/s' or '100/1m'",
  // eslint-disable-next-line @typescript-eslint/no-unnecessary-type-assertion -- isolatedDeclarations needs the type written
  algorithm: `one of ${RULE_ALGORITHM_NAMES.map((a) => `'${a}'`).join(', ')}` as string,
  cost: 'a positive number',
  onLimit: "'reject', 'drop', or an object with action 'reject', 'queue' (with maxWait) or 'drop'",
  action: "'reject', 'queue' or 'drop'",
  status: '429 or 503',
  boolean: 'true or false',
  ban: "an object like { after: 5, within: '1m', for: '15m' }",
  banAfter: `a whole number of refusals from 1 to ${MAX_BAN_AFTER}` as string,
  count: "'all', 'failed' or 'successful'",
  tiers: 'an object with by (a key part), values (tier name to limit) and optionally default',
  tierBy: "'user', 'header:<name>' or 'custom:<name>' (the key part naming the tier)",
  tierName: "a tier name of 1-64 letters, digits, '.', '_' or '-'",
  tierValues: 'an object mapping tier names to { limit, window } (or { rate })',
  tier: 'an object with limit and window, or rate, and optionally burst',
} as const

/** A positive safe integer. */
export const positiveInt: Field<number> = (value, c) =>
  typeof value === 'number' && Number.isSafeInteger(value) && value > 0
    ? value
    : c.expected(E.posInt, value)

/** A finite number above 0, at most `Number.MAX_SAFE_INTEGER`. */
export const cost: Field<number> = (value, c) =>
  typeof value === 'number' &&
  Number.isFinite(value) &&
  value > 0 &&
  value <= Number.MAX_SAFE_INTEGER
    ? value
    : c.expected(E.cost, value)

/** A duration in milliseconds, from `'10s'` or a number of milliseconds. */
export const duration: Field<number> = (value, c) => {
  const ms = durationMs(value)
  if (ms === undefined || ms <= 0) return c.expected(E.duration, value)
  if (ms > MAX_DURATION_MS) {
    return c.expected(`a duration of at most ${MAX_DURATION_MS} ms (about 24.8 days)`, value)
  }
  return ms
}

/** `'10/s'` or `'100/1m'`: a limit per window. */
export const rate: Field<{ limit: number; windowMs: number; text: string }> = (value, c) => {
  if (typeof value !== 'string') return c.expected(E.rate, value)
  const m = RATE.exec(value)
  const limit = m ? Number(m[1]) : 0
  // '10/s' reads as ten per one second.
  const unit = m?.[2] ?? ''
  const windowMs = durationMs(/^(ms|s|m|h|d)$/.test(unit) ? `1${unit}` : unit)
  if (!m || limit <= 0 || windowMs === undefined || windowMs <= 0) {
    return c.expected(E.rate, value)
  }
  if (windowMs > MAX_DURATION_MS) {
    return c.expected(`a rate whose window is at most ${MAX_DURATION_MS} ms`, value)
  }
  return { limit, windowMs, text: value }
}

const asList = <T>(value: T | readonly T[]): readonly T[] =>
  Array.isArray(value) ? (value as readonly T[]) : [value as T]

/** Checks path patterns, reporting each at its own index when given as a list. */
function normalisePaths(
  value: string | readonly string[],
  c: Checker,
  path: PropertyKey[],
): string[] | undefined {
  const out: string[] = []
  let ok = true
  asList(value).forEach((p, i) => {
    const checked = checkPathPattern(p)
    if ('error' in checked) {
      ok = false
      c.expected(checked.error, p, Array.isArray(value) ? [...path, i] : path)
    } else out.push(checked.pattern)
  })
  return ok ? out : undefined
}

function normaliseMethods(
  value: string | readonly string[],
  c: Checker,
  path: PropertyKey[],
  listed = Array.isArray(value),
): string[] | undefined {
  const out = new Set<string>()
  let ok = true
  asList(value).forEach((m, i) => {
    if (!METHOD.test(m)) {
      ok = false
      c.expected(E.method, m, listed ? [...path, i] : path)
    } else out.add(m.toUpperCase())
  })
  return ok ? [...out] : undefined
}

// A plain object only: the conditions are read from the caller's object itself, never copied
// into a `{}` that would lose a condition named `__proto__` and match everything.
const headerObject: Field<Readonly<Record<string, unknown>>> = (value, c) => {
  if (isObject(value)) {
    const proto: unknown = Object.getPrototypeOf(value)
    if (proto === Object.prototype || proto === null) return value
  }
  return c.expected(E.headers, value)
}

const matchFields = {
  methods: stringOrList(E.method, E.methods),
  paths: stringOrList(E.path, E.paths),
  headers: headerObject,
  hosts: stringOrList(E.host, E.hosts),
}

/** `'POST /export'`, `'/api/**'`, an object of conditions, or `false` (no HTTP request). */
export const match: Field<RuleMatch | false> = (value, c) => {
  if (value === false) return false
  if (typeof value === 'string') return matchString(value, c)
  if (!isObject(value)) return c.expected(E.match, value)
  // Each field is normalised when its type is right, whatever its siblings hold, so every
  // problem is reported at once.
  const before = c.count
  const { fields } = checkFields(value, matchFields, c)
  const methods =
    fields.methods === undefined ? undefined : normaliseMethods(fields.methods, c, ['methods'])
  const paths = fields.paths === undefined ? undefined : normalisePaths(fields.paths, c, ['paths'])
  let headers: Record<string, string | true> | undefined
  if (fields.headers) {
    headers = Object.create(null) as Record<string, string | true>
    const once = new SpelledOnce(c, 'each header name once, in any case', ['headers'])
    // Own entries only, read from the caller's object: every name is kept exactly.
    for (const [name, v] of Object.entries(fields.headers)) {
      if (typeof v !== 'string' && v !== true) {
        c.expected(E.headerValue, v, ['headers', name])
      } else if (!HEADER_NAME.test(name)) {
        c.expected("a header name (letters, digits and !#$%&'*+.^_`|~-)", name, ['headers', name])
      } else if (v !== true && !isCarriedHeaderValue(v)) {
        // A condition no request can meet would turn the rule off without a word.
        c.expected(HEADER_VALUE_EXPECTED, v, ['headers', name])
      } else if (once.first(name.toLowerCase(), name)) headers[name.toLowerCase()] = v
    }
  }
  let hosts: string[] | undefined
  if (fields.hosts) {
    hosts = []
    const listed = Array.isArray(fields.hosts)
    asList(fields.hosts).forEach((h, i) => {
      if (h.length > 253 || !HOST.test(h)) {
        c.expected(E.host, h, listed ? ['hosts', i] : ['hosts'])
      } else hosts!.push(h.toLowerCase())
    })
  }
  if (c.count !== before) return BAD
  return freezeMatch({ methods, paths, headers, hosts })
}

// 'POST /export', 'GET,HEAD /users/:id' or '/api/**'.
function matchString(value: string, c: Checker): RuleMatch | Bad {
  const parts = value.trim().split(/\s+/)
  const [first = '', second] = parts
  if (parts.length > 2 || (parts.length === 2 && !second!.startsWith('/'))) {
    return c.expected(E.match, value)
  }
  const methods = parts.length === 2 ? normaliseMethods(first.split(','), c, [], false) : undefined
  const paths = normalisePaths(parts.length === 2 ? second! : first, c, [])
  if (!paths || (parts.length === 2 && !methods)) return BAD
  return freezeMatch({ methods, paths })
}

function freezeMatch(m: {
  methods?: string[] | undefined
  paths?: string[] | undefined
  headers?: Record<string, string | true> | undefined
  hosts?: string[] | undefined
}): RuleMatch {
  const out: { -readonly [K in keyof RuleMatch]: RuleMatch[K] } = {}
  if (m.methods) out.methods = Object.freeze(m.methods)
  if (m.paths) out.paths = Object.freeze(m.paths)
  if (m.headers) out.headers = Object.freeze(m.headers)
  if (m.hosts) out.hosts = Object.freeze([...new Set(m.hosts)])
  return Object.freeze(out)
}

/** One key part, normalised (a header name in lower case); undefined after recording why not. */
export function keyPart(
  value: string,
  c: Checker,
  path: PropertyKey[],
  what: string = E.keyPart,
): KeyPart | undefined {
  if (value === 'ip' || value === 'user') return value
  if (value.startsWith('header:')) {
    const name = value.slice(7)
    if (HEADER_NAME.test(name)) return `header:${name.toLowerCase()}`
  } else if (CUSTOM_KEY.test(value)) return value as `custom:${string}`
  c.expected(what, value, path)
  return undefined
}

const keyList = stringOrList(E.keyPart, E.key)

/** One key part or a list of them, each once. */
export const key: Field<readonly KeyPart[]> = (input, c) => {
  const value = keyList(input, c)
  if (value === BAD) return BAD
  const listed = Array.isArray(value)
  const parts = asList(value)
  if (parts.length > MAX_KEY_PARTS) {
    return c.expected(`a key of at most ${MAX_KEY_PARTS} parts`, value)
  }
  const out: KeyPart[] = []
  let ok = true
  parts.forEach((p, i) => {
    const part = keyPart(p, c, listed ? [i] : [])
    if (part === undefined) ok = false
    else if (out.includes(part)) {
      ok = false
      c.expected('each key part once', p, [i])
    } else out.push(part)
  })
  return ok ? Object.freeze(out) : BAD
}

export const REJECT_429: OverLimit = Object.freeze({ action: 'reject', status: 429 })
const REJECT_503: OverLimit = Object.freeze({ action: 'reject', status: 503 })
const DROP: OverLimit = Object.freeze({ action: 'drop' })

// The fields of each action; an unknown field is named against its own action's list.
const onLimitFields = {
  reject: { action: oneOf(['reject'], E.action), status: oneOf([429, 503], E.status) },
  queue: { action: oneOf(['queue'], E.action), maxWait: duration, maxQueue: positiveInt },
  drop: { action: oneOf(['drop'], E.action) },
} as const

/** `'reject'`, `'drop'`, or `{ action: 'reject' | 'queue' | 'drop', … }`. */
export const onLimit: Field<OverLimit> = (value, c) => {
  if (value === 'reject') return REJECT_429
  if (value === 'drop') return DROP
  if (!isObject(value)) return c.expected(E.onLimit, value)
  const action = Object.hasOwn(value, 'action') ? value.action : undefined
  switch (action) {
    case 'reject': {
      const { fields, ok } = checkFields(value, onLimitFields.reject, c)
      if (!ok) return BAD
      return fields.status === 503 ? REJECT_503 : REJECT_429
    }
    case 'queue': {
      const { fields, ok } = checkFields(value, onLimitFields.queue, c, ['maxWait'])
      if (!ok) return BAD
      const { maxWait, maxQueue = 100 } = fields
      return Object.freeze({ action: 'queue', maxWaitMs: maxWait!, maxQueue })
    }
    case 'drop':
      return checkFields(value, onLimitFields.drop, c).ok ? DROP : BAD
    default:
      return c.expected(E.action, action, ['action'])
  }
}

/** `true` or `false`. */
export const boolean: Field<boolean> = (value, c) =>
  typeof value === 'boolean' ? value : c.expected(E.boolean, value)

const banFields = {
  after: ((value, c) =>
    typeof value === 'number' && Number.isInteger(value) && value >= 1 && value <= MAX_BAN_AFTER
      ? value
      : c.expected(E.banAfter, value)) as Field<number>,
  within: duration,
  for: duration,
} as const

/** `ban: { after, within, for }`: the refusals that start a ban, their period, its length. */
export const ban: Field<RuleBan> = (value, c) => {
  if (!isObject(value)) return c.expected(E.ban, value)
  const { fields, ok } = checkFields(value, banFields, c, ['after', 'within', 'for'])
  if (!ok) return BAD
  return Object.freeze({ after: fields.after!, withinMs: fields.within!, forMs: fields.for! })
}

/** `'all'`, `'failed'` or `'successful'`: which admitted requests stay counted. */
export const count: Field<CountMode> = oneOf(['all', 'failed', 'successful'], E.count)

/** Most tiers one rule may have. */
export const MAX_TIERS = 32
// Like ID, but never `__proto__`: an object key of that name would be lost, not reported.
const TIER_NAME = /^(?!__proto__$)[A-Za-z0-9._-]{1,64}$/

const tierFields = { limit: positiveInt, window: duration, rate, burst: positiveInt } as const

/** A tier as written; completed (window, burst) by the rule check, which knows the rule. */
export interface TierInput {
  readonly limit: number | undefined
  readonly window: number | undefined
  readonly rate: { limit: number; windowMs: number; text: string } | undefined
  readonly burst: number | undefined
}

/** The `tiers` field as written, each tier checked on its own. */
export interface TiersInput {
  readonly by: Exclude<KeyPart, 'ip'>
  readonly values: Readonly<Record<string, TierInput>>
  readonly default: string | undefined
}

const tierBy: Field<Exclude<KeyPart, 'ip'>> = (value, c) => {
  // The client's address names no plan: a tier needs a key part the application sets.
  if (typeof value !== 'string' || value === 'ip') return c.expected(E.tierBy, value)
  const part = keyPart(value, c, [], E.tierBy)
  return part === undefined || part === 'ip' ? BAD : part
}

const tierValues: Field<Readonly<Record<string, TierInput>>> = (value, c) => {
  if (!isObject(value)) return c.expected(E.tierValues, value)
  const before = c.count
  const names = Object.keys(value)
  if (names.length === 0 || names.length > MAX_TIERS) {
    c.expected(`from 1 to ${MAX_TIERS} tiers`, value)
  }
  // No prototype: a tier named like an Object method stays a plain entry.
  const out = Object.create(null) as Record<string, TierInput>
  for (const name of names) {
    if (!TIER_NAME.test(name)) {
      c.expected(E.tierName, name, [name])
      continue
    }
    const tier: unknown = value[name]
    const at = c.at(name)
    if (!isObject(tier)) {
      at.expected(E.tier, tier)
      continue
    }
    const { fields, ok } = checkFields(tier, tierFields, at)
    if (ok) out[name] = Object.freeze({ ...fields })
  }
  return c.count === before ? Object.freeze(out) : BAD
}

const tiersFields = {
  by: tierBy,
  values: tierValues,
  default: ((value, c) =>
    typeof value === 'string' ? value : c.expected(E.tierName, value)) as Field<string>,
} as const

/** `tiers: { by, values, default? }`: limits chosen per request by the value of a key part. */
export const tiers: Field<TiersInput> = (value, c) => {
  if (!isObject(value)) return c.expected(E.tiers, value)
  const { fields, failed, ok } = checkFields(value, tiersFields, c, ['by', 'values'])
  const values = Object.hasOwn(value, 'values') ? value.values : undefined
  if (fields.default !== undefined && isObject(values) && !Object.hasOwn(values, fields.default)) {
    const names = Object.keys(values).join(', ')
    c.expected(`the name of a tier in values (${names})`, fields.default, ['default'])
    return BAD
  }
  if (!ok || failed.size > 0) return BAD
  return { by: fields.by!, values: fields.values!, default: fields.default }
}
