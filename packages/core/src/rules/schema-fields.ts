import { z } from 'zod'
import { durationMs } from '../duration.js'
import { ALGORITHM_NAMES } from './algorithm-catalog.js'
import { checkPathPattern } from './path-pattern.js'
import type { KeyPart, OverLimit, RuleMatch } from './rule.js'

// The field schemas a rule is built from, each with the message its errors carry.

/** The longest duration a rule may use: `setTimeout` overflows above 2^31-1 ms and would fire at once. */
export const MAX_DURATION_MS = 2 ** 31 - 1

const MAX_KEY_PARTS = 8
export const ID = /^[A-Za-z0-9._-]{1,64}$/
const METHOD = /^[A-Za-z]{1,20}$/
// RFC 9110 token characters: the only characters a header name may hold.
const HEADER_NAME = /^[A-Za-z0-9!#$%&'*+.^_`|~-]{1,128}$/
const CUSTOM_KEY = /^custom:[A-Za-z0-9._-]{1,64}$/
const HOST_LABEL = '[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?'
const HOST = new RegExp(`^(?:\\*\\.)?${HOST_LABEL}(?:\\.${HOST_LABEL})*$`)
const RATE = /^(\d{1,15})\/(.+)$/

// What each field expects, phrased to follow "expected" in an error message.
export const E = {
  rules: 'a list of rules',
  rule: 'a rule object',
  id: "an id of 1-64 letters, digits, '.', '_' or '-'",
  description: 'a string',
  match:
    "a string like 'POST /export' or '/api/**', or an object with methods, paths, headers, hosts",
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
  algorithm: `one of ${ALGORITHM_NAMES.map((a) => `'${a}'`).join(', ')}`,
  cost: 'a positive number',
  onLimit: "'reject', 'drop', or an object with action 'reject', 'queue' (with maxWait) or 'drop'",
  action: "'reject', 'queue' or 'drop'",
  status: '429 or 503',
  boolean: 'true or false',
  count: "'all', 'failed' or 'successful'",
  tiers: 'an object with by (a key part), values (tier name to limit) and optionally default',
  tierBy: "'user', 'header:<name>' or 'custom:<name>' (the key part naming the tier)",
  tierName: "a tier name of 1-64 letters, digits, '.', '_' or '-'",
  tierValues: 'an object mapping tier names to { limit, window } (or { rate })',
  tier: 'an object with limit and window, or rate, and optionally burst',
} as const

export const err = (error: string): { error: string } => ({ error })

type Ctx = z.core.$RefinementCtx

/** Adds an issue rendered as `path: expected <expected>, got <input>`. */
export function expected(ctx: Ctx, what: string, input: unknown, path: PropertyKey[] = []): void {
  ctx.addIssue({ code: 'custom', message: what, input, path })
}

export const positiveInt = z.number(err(E.posInt)).int(err(E.posInt)).positive(err(E.posInt))

export const duration = z
  .union([z.string(), z.number()], err(E.duration))
  .transform((value, ctx): number => {
    const ms = durationMs(value)
    if (ms === undefined || ms <= 0) {
      expected(ctx, E.duration, value)
      return z.NEVER
    }
    if (ms > MAX_DURATION_MS) {
      expected(ctx, `a duration of at most ${MAX_DURATION_MS} ms (about 24.8 days)`, value)
      return z.NEVER
    }
    return ms
  })

export const rate = z
  .string(err(E.rate))
  .transform((value, ctx): { limit: number; windowMs: number; text: string } => {
    const m = RATE.exec(value)
    const limit = m ? Number(m[1]) : 0
    // '10/s' reads as ten per one second.
    const unit = m?.[2] ?? ''
    const windowMs = durationMs(/^(ms|s|m|h|d)$/.test(unit) ? `1${unit}` : unit)
    if (!m || limit <= 0 || windowMs === undefined || windowMs <= 0) {
      expected(ctx, E.rate, value)
      return z.NEVER
    }
    if (windowMs > MAX_DURATION_MS) {
      expected(ctx, `a rate whose window is at most ${MAX_DURATION_MS} ms`, value)
      return z.NEVER
    }
    return { limit, windowMs, text: value }
  })

const list = <T extends z.ZodType>(item: T, what: string) =>
  z.union([item, z.array(item, err(what)).min(1, err(`${what} (not empty)`))], err(what))

const asList = <T>(value: T | readonly T[]): readonly T[] =>
  Array.isArray(value) ? (value as readonly T[]) : [value as T]

/** Checks path patterns, reporting each at its own index when given as a list. */
function normalisePaths(
  value: string | readonly string[],
  ctx: Ctx,
  path: PropertyKey[],
): string[] | undefined {
  const out: string[] = []
  let ok = true
  asList(value).forEach((p, i) => {
    const checked = checkPathPattern(p)
    if ('error' in checked) {
      ok = false
      expected(ctx, checked.error, p, Array.isArray(value) ? [...path, i] : path)
    } else out.push(checked.pattern)
  })
  return ok ? out : undefined
}

function normaliseMethods(
  value: string | readonly string[],
  ctx: Ctx,
  path: PropertyKey[],
  listed = Array.isArray(value),
): string[] | undefined {
  const out = new Set<string>()
  let ok = true
  asList(value).forEach((m, i) => {
    if (!METHOD.test(m)) {
      ok = false
      expected(ctx, E.method, m, listed ? [...path, i] : path)
    } else out.add(m.toUpperCase())
  })
  return ok ? [...out] : undefined
}

function isHeaderObject(v: unknown): boolean {
  if (typeof v !== 'object' || v === null || Array.isArray(v)) return false
  const proto: unknown = Object.getPrototypeOf(v)
  return proto === Object.prototype || proto === null
}

const matchObject = z.strictObject(
  {
    methods: list(z.string(err(E.method)), E.methods).optional(),
    paths: list(z.string(err(E.path)), E.paths).optional(),
    // Checked by hand in the transform: a record schema would copy the object into a plain
    // `{}` and lose a condition named `__proto__`, turning the rule into a match-everything.
    headers: z
      .custom<Readonly<Record<string, string | true>>>(isHeaderObject, err(E.headers))
      .optional(),
    hosts: list(z.string(err(E.host)), E.hosts).optional(),
  },
  err(E.match),
)

export const match = z
  .union([z.string(err(E.match)), matchObject], err(E.match))
  .transform((value, ctx): RuleMatch => {
    if (typeof value === 'string') {
      // 'POST /export', 'GET,HEAD /users/:id' or '/api/**'.
      const parts = value.trim().split(/\s+/)
      const [first = '', second] = parts
      if (parts.length > 2 || (parts.length === 2 && !second!.startsWith('/'))) {
        expected(ctx, E.match, value)
        return z.NEVER
      }
      const methods =
        parts.length === 2 ? normaliseMethods(first.split(','), ctx, [], false) : undefined
      const paths = normalisePaths(parts.length === 2 ? second! : first, ctx, [])
      if (!paths || (parts.length === 2 && !methods)) return z.NEVER
      return freezeMatch({ methods, paths })
    }
    let ok = true
    const methods =
      value.methods === undefined ? undefined : normaliseMethods(value.methods, ctx, ['methods'])
    const paths =
      value.paths === undefined ? undefined : normalisePaths(value.paths, ctx, ['paths'])
    if ((value.methods !== undefined && !methods) || (value.paths !== undefined && !paths))
      ok = false
    let headers: Record<string, string | true> | undefined
    if (value.headers) {
      headers = Object.create(null) as Record<string, string | true>
      // Own entries only, read from the caller's object: every name is kept exactly.
      for (const [name, v] of Object.entries(value.headers) as [string, unknown][]) {
        if (typeof v !== 'string' && v !== true) {
          ok = false
          expected(ctx, E.headerValue, v, ['headers', name])
        } else if (!HEADER_NAME.test(name)) {
          ok = false
          expected(ctx, "a header name (letters, digits and !#$%&'*+.^_`|~-)", name, [
            'headers',
            name,
          ])
        } else headers[name.toLowerCase()] = v
      }
    }
    let hosts: string[] | undefined
    if (value.hosts) {
      hosts = []
      const listed = Array.isArray(value.hosts)
      asList(value.hosts).forEach((h, i) => {
        const host = h.toLowerCase()
        if (host.length > 253 || !HOST.test(host)) {
          ok = false
          expected(ctx, E.host, h, listed ? ['hosts', i] : ['hosts'])
        } else hosts!.push(host)
      })
    }
    if (!ok) return z.NEVER
    return freezeMatch({ methods, paths, headers, hosts })
  })

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

function keyPart(
  value: string,
  ctx: Ctx,
  path: PropertyKey[],
  what: string = E.keyPart,
): KeyPart | undefined {
  if (value === 'ip' || value === 'user') return value
  if (value.startsWith('header:')) {
    const name = value.slice(7)
    if (HEADER_NAME.test(name)) return `header:${name.toLowerCase()}`
  } else if (CUSTOM_KEY.test(value)) return value as `custom:${string}`
  expected(ctx, what, value, path)
  return undefined
}

/** Most tiers one rule may have. */
export const MAX_TIERS = 32
// Like ID, but never `__proto__`: an object key of that name would be lost, not reported.
const TIER_NAME = /^(?!__proto__$)[A-Za-z0-9._-]{1,64}$/

export const tierObject = z.strictObject(
  {
    limit: positiveInt.optional(),
    window: duration.optional(),
    rate: rate.optional(),
    burst: positiveInt.optional(),
  },
  err(E.tier),
)

/** A tier as written; completed (window, burst) by the rule schema, which knows the rule. */
export type TierInput = z.output<typeof tierObject>

export const tiers = z.strictObject(
  {
    by: z.string(err(E.tierBy)).transform((value, ctx): Exclude<KeyPart, 'ip'> => {
      const part = value === 'ip' ? undefined : keyPart(value, ctx, [], E.tierBy)
      if (part === undefined || part === 'ip') {
        if (value === 'ip') expected(ctx, E.tierBy, value)
        return z.NEVER
      }
      return part
    }),
    values: z.preprocess(
      (value, ctx) => {
        // A JSON key `__proto__` would be dropped by the record, not reported: refuse it here.
        if (typeof value === 'object' && value !== null && Object.hasOwn(value, '__proto__')) {
          expected(ctx, E.tierName, '__proto__', ['__proto__'])
        }
        return value
      },
      z.record(z.string().regex(TIER_NAME, err(E.tierName)), tierObject, err(E.tierValues)),
    ),
    default: z.string(err(E.tierName)).optional(),
  },
  err(E.tiers),
)

export const count = z.enum(['all', 'failed', 'successful'], err(E.count))

export const key = list(z.string(err(E.keyPart)), E.key).transform(
  (value, ctx): readonly KeyPart[] => {
    const listed = Array.isArray(value)
    const parts = asList(value)
    if (parts.length > MAX_KEY_PARTS) {
      expected(ctx, `a key of at most ${MAX_KEY_PARTS} parts`, value)
      return z.NEVER
    }
    const out: KeyPart[] = []
    let ok = true
    parts.forEach((p, i) => {
      const part = keyPart(p, ctx, listed ? [i] : [])
      if (part === undefined) ok = false
      else if (out.includes(part)) {
        ok = false
        expected(ctx, 'each key part once', p, [i])
      } else out.push(part)
    })
    return ok ? Object.freeze(out) : z.NEVER
  },
)

const onLimitObject = z.discriminatedUnion(
  'action',
  [
    z.strictObject(
      {
        action: z.literal('reject'),
        status: z.union([z.literal(429), z.literal(503)], err(E.status)).optional(),
      },
      err(E.onLimit),
    ),
    z.strictObject(
      { action: z.literal('queue'), maxWait: duration, maxQueue: positiveInt.optional() },
      err(E.onLimit),
    ),
    z.strictObject({ action: z.literal('drop') }, err(E.onLimit)),
  ],
  err(E.action),
)

export const REJECT_429: OverLimit = Object.freeze({ action: 'reject', status: 429 })
const REJECT_503: OverLimit = Object.freeze({ action: 'reject', status: 503 })
const DROP: OverLimit = Object.freeze({ action: 'drop' })

export const onLimit = z
  .union([z.enum(['reject', 'drop'], err(E.onLimit)), onLimitObject], err(E.onLimit))
  .transform((value): OverLimit => {
    if (value === 'reject') return REJECT_429
    if (value === 'drop') return DROP
    switch (value.action) {
      case 'reject':
        return value.status === 503 ? REJECT_503 : REJECT_429
      case 'drop':
        return DROP
      case 'queue':
        return Object.freeze({
          action: 'queue',
          maxWaitMs: value.maxWait,
          maxQueue: value.maxQueue ?? 100,
        })
    }
  })
