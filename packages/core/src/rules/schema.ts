import { z } from 'zod'
import type { AlgorithmName } from '../algorithms/algorithm.js'
import { durationMs } from '../duration.js'
import { RulesValidationError } from '../errors.js'
import {
  ALGORITHM_NAMES,
  BUCKET_ALGORITHMS,
  MAX_SLIDING_LOG_LIMIT,
  canReserve,
} from './algorithm-catalog.js'
import { formatValue } from './format-value.js'
import { checkPathPattern } from './path-pattern.js'
import type { FallbackKey, KeyPart, OverLimit, Rule, RuleMatch } from './rule.js'

/** The longest duration a rule may use: `setTimeout` overflows above 2^31-1 ms (P32). */
export const MAX_DURATION_MS = 2 ** 31 - 1

const MAX_KEY_PARTS = 8
const MAX_ISSUES = 50
const ID = /^[A-Za-z0-9._-]{1,64}$/
const METHOD = /^[A-Za-z]{1,20}$/
// RFC 9110 token characters: the only characters a header name may hold.
const HEADER_NAME = /^[A-Za-z0-9!#$%&'*+.^_`|~-]{1,128}$/
const CUSTOM_KEY = /^custom:[A-Za-z0-9._-]{1,64}$/
const HOST_LABEL = '[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?'
const HOST = new RegExp(`^(?:\\*\\.)?${HOST_LABEL}(?:\\.${HOST_LABEL})*$`)
const RATE = /^(\d{1,15})\/(.+)$/

// What each field expects, phrased to follow "expected" in an error message.
const E = {
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
} as const

const err = (error: string): { error: string } => ({ error })

// Known fields per object, for "unknown field" messages.
const RULE_FIELDS = [
  'id',
  'description',
  'match',
  'key',
  'fallbackKey',
  'limit',
  'window',
  'rate',
  'algorithm',
  'burst',
  'cost',
  'onLimit',
  'shadow',
]
const MATCH_FIELDS = ['methods', 'paths', 'headers', 'hosts']
const ON_LIMIT_FIELDS = ['action', 'status', 'maxWait', 'maxQueue']

type Ctx = z.core.$RefinementCtx

/** Adds an issue rendered as `path: expected <expected>, got <input>`. */
function expected(ctx: Ctx, what: string, input: unknown, path: PropertyKey[] = []): void {
  ctx.addIssue({ code: 'custom', message: what, input, path })
}

const positiveInt = z.number(err(E.posInt)).int(err(E.posInt)).positive(err(E.posInt))

const duration = z
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

const rate = z
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

const match = z
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

function keyPart(value: string, ctx: Ctx, path: PropertyKey[]): KeyPart | undefined {
  if (value === 'ip' || value === 'user') return value
  if (value.startsWith('header:')) {
    const name = value.slice(7)
    if (HEADER_NAME.test(name)) return `header:${name.toLowerCase()}`
  } else if (CUSTOM_KEY.test(value)) return value as `custom:${string}`
  expected(ctx, E.keyPart, value, path)
  return undefined
}

const key = list(z.string(err(E.keyPart)), E.key).transform((value, ctx): readonly KeyPart[] => {
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
})

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

const onLimit = z
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

const REJECT_429: OverLimit = Object.freeze({ action: 'reject', status: 429 })
const REJECT_503: OverLimit = Object.freeze({ action: 'reject', status: 503 })
const DROP: OverLimit = Object.freeze({ action: 'drop' })
const DEFAULT_KEY: readonly KeyPart[] = Object.freeze(['ip'])
const EVERYTHING: RuleMatch = Object.freeze({})

const ruleObject = z.strictObject(
  {
    id: z.string(err(E.id)).regex(ID, err(E.id)),
    description: z
      .string(err(E.description))
      .max(1000, err('a description of at most 1000 characters'))
      .optional(),
    match: match.optional(),
    key: key.optional(),
    fallbackKey: z.enum(['ip', 'skip', 'shared'], err(E.fallbackKey)).optional(),
    limit: positiveInt.optional(),
    window: duration.optional(),
    rate: rate.optional(),
    algorithm: z.enum(ALGORITHM_NAMES, err(E.algorithm)).optional(),
    burst: positiveInt.optional(),
    cost: z
      .number(err(E.cost))
      .positive(err(E.cost))
      .max(Number.MAX_SAFE_INTEGER, err(E.cost))
      .optional(),
    onLimit: onLimit.optional(),
    shadow: z.boolean(err(E.boolean)).optional(),
  },
  err(E.rule),
)

/**
 * The schema of one rule: plain data (JSON or YAML) in, a normalised {@link Rule} out, with
 * every default filled in and durations in milliseconds. Core, the rules service and the
 * adapters all validate with this one schema.
 *
 * Prefer {@link parseRules}, which turns zod's issues into messages naming the path.
 */
export const ruleSchema = ruleObject.transform((v, ctx): Rule => {
  const algorithm: AlgorithmName = v.algorithm ?? 'token-bucket'
  let limit = v.limit
  let windowMs = v.window
  if (v.rate !== undefined) {
    if (v.limit !== undefined || v.window !== undefined) {
      ctx.addIssue({
        code: 'custom',
        message: 'either rate, or limit and window, not both',
        input: v.rate.text,
        path: ['rate'],
      })
    } else if (algorithm === 'concurrency') {
      expected(
        ctx,
        "no rate for algorithm 'concurrency' (set limit: the requests in flight)",
        v.rate.text,
        ['rate'],
      )
    }
    limit = v.rate.limit
    windowMs = v.rate.windowMs
  }
  if (limit === undefined) expected(ctx, E.posInt, undefined, ['limit'])
  // A concurrency rule counts requests in flight; it has no window.
  if (windowMs === undefined && algorithm !== 'concurrency') {
    expected(ctx, E.duration, undefined, ['window'])
  }
  const bucket = BUCKET_ALGORITHMS.has(algorithm)
  if (v.burst !== undefined && !bucket) {
    expected(
      ctx,
      `no burst for algorithm '${algorithm}' (only token-bucket, gcra and leaky-bucket have one)`,
      v.burst,
      ['burst'],
    )
  }
  if (algorithm === 'sliding-window-log' && limit !== undefined && limit > MAX_SLIDING_LOG_LIMIT) {
    expected(
      ctx,
      `a limit of at most ${MAX_SLIDING_LOG_LIMIT} for sliding-window-log, which stores a timestamp per request (sliding-window-counter scales to any limit)`,
      limit,
      [v.rate !== undefined ? 'rate' : 'limit'],
    )
  }
  const burst = bucket ? (v.burst ?? limit ?? 1) : (limit ?? 1)
  const cost = v.cost ?? 1
  if (cost > burst) {
    expected(
      ctx,
      `a cost of at most the rule's capacity (${burst}); a dearer request could never pass`,
      cost,
      ['cost'],
    )
  }
  const over = v.onLimit ?? REJECT_429
  if (over.action === 'queue' && !canReserve(algorithm)) {
    expected(
      ctx,
      `'reject' or 'drop': algorithm '${algorithm}' cannot reserve capacity, so it cannot queue`,
      'queue',
      ['onLimit', 'action'],
    )
  }
  return Object.freeze({
    id: v.id,
    description: v.description,
    match: v.match ?? EVERYTHING,
    key: v.key ?? DEFAULT_KEY,
    fallbackKey: (v.fallbackKey ?? 'ip') satisfies FallbackKey,
    algorithm,
    limit: limit ?? 1,
    windowMs: windowMs ?? 0,
    burst,
    cost,
    onLimit: over,
    shadow: v.shadow ?? false,
  })
})

/** A rule set: a list of rules with unique ids. */
export const rulesSchema = z.array(ruleSchema, err(E.rules)).superRefine(
  (rules, ctx) => {
    // Runs even when some rules failed (`when`), so every problem is reported at once; a
    // failed element is still the raw input here, hence the defensive reads.
    if (!Array.isArray(rules)) return
    const seen = new Map<string, number>()
    rules.forEach((r: unknown, i) => {
      const id = typeof r === 'object' && r !== null ? (r as { id?: unknown }).id : undefined
      if (typeof id !== 'string') return
      const first = seen.get(id)
      if (first === undefined) seen.set(id, i)
      else {
        ctx.addIssue({
          code: 'custom',
          message: `duplicate id ${JSON.stringify(id)} (also rules[${first}])`,
          path: [i, 'id'],
          params: { raw: true },
        })
      }
    })
  },
  { when: () => true },
)

/** A rule as written in JSON, YAML or code: the input of {@link ruleSchema}. */
export type RuleInput = z.input<typeof ruleSchema>

function formatPath(prefix: string, path: readonly PropertyKey[]): string {
  let out = prefix
  for (const p of path) {
    if (typeof p === 'number') out += `[${p}]`
    else if (typeof p === 'string' && /^[A-Za-z_$][\w$]*$/.test(p)) out += out ? `.${p}` : p
    else out += `[${JSON.stringify(String(p))}]`
  }
  return out
}

// A union branch whose input had the wrong type altogether (as opposed to a branch that
// matched the type and failed deeper down, whose issues say more).
function isTypeMismatch(issues: readonly z.core.$ZodIssue[]): boolean {
  return issues.every(
    (i) =>
      i.path.length === 0 &&
      (i.code === 'invalid_type' ||
        i.code === 'invalid_value' ||
        (i.code === 'invalid_union' && i.errors.every(isTypeMismatch))),
  )
}

function distance(a: string, b: string): number {
  const row = Array.from({ length: b.length + 1 }, (_, j) => j)
  for (let i = 1; i <= a.length; i++) {
    let prev = row[0]!
    row[0] = i
    for (let j = 1; j <= b.length; j++) {
      const cur = row[j]!
      row[j] = Math.min(row[j]! + 1, row[j - 1]! + 1, prev + (a[i - 1] === b[j - 1] ? 0 : 1))
      prev = cur
    }
  }
  return row[b.length]!
}

function knownFields(path: readonly PropertyKey[], input: Record<string, unknown>): string[] {
  const last = path[path.length - 1]
  if (last === 'match') return MATCH_FIELDS
  if (last === 'onLimit') {
    const action = input.action
    if (action === 'reject') return ['action', 'status']
    if (action === 'queue') return ['action', 'maxWait', 'maxQueue']
    if (action === 'drop') return ['action']
    return ON_LIMIT_FIELDS
  }
  return RULE_FIELDS
}

function collectIssues(
  issues: readonly z.core.$ZodIssue[],
  base: readonly PropertyKey[],
  prefix: string,
  out: string[],
): void {
  for (const issue of issues) {
    const path = [...base, ...issue.path]
    if (issue.code === 'unrecognized_keys') {
      const input = issue.input
      const known = knownFields(path, input ?? {})
      for (const k of issue.keys) {
        const near = known.find((f) => distance(f.toLowerCase(), k.toLowerCase()) <= 2)
        const hint = near ? `did you mean "${near}"?` : `one of ${known.join(', ')}`
        const value = input && Object.hasOwn(input, k) ? input[k] : undefined
        out.push(
          `${formatPath(prefix, [...path, k])}: expected a known field (${hint}), got ${formatValue(value)}`,
        )
      }
    } else if (
      issue.code === 'invalid_union' &&
      issue.errors.length === 0 &&
      issue.path.length > 0
    ) {
      // A discriminated union whose discriminator matched no option: show that field's value.
      const field = issue.path[issue.path.length - 1]!
      const input = issue.input as Record<PropertyKey, unknown> | undefined
      const value = input && typeof input === 'object' ? input[field] : undefined
      out.push(`${formatPath(prefix, path)}: expected ${issue.message}, got ${formatValue(value)}`)
    } else if (issue.code === 'invalid_union') {
      const specific = issue.errors.filter((branch) => !isTypeMismatch(branch))
      if (specific.length === 1) collectIssues(specific[0]!, path, prefix, out)
      else
        out.push(
          `${formatPath(prefix, path)}: expected ${issue.message}, got ${formatValue(issue.input)}`,
        )
    } else if (issue.code === 'custom' && (issue.params as { raw?: boolean } | undefined)?.raw) {
      out.push(`${formatPath(prefix, path)}: ${issue.message}`)
    } else {
      out.push(
        `${formatPath(prefix, path)}: expected ${issue.message}, got ${formatValue(issue.input)}`,
      )
    }
  }
}

/** Turns zod issues into `path: expected …, got …` lines, capped so a huge input stays readable. */
function toMessages(error: z.ZodError, prefix: string): string[] {
  const out: string[] = []
  collectIssues(error.issues, [], prefix, out)
  if (out.length > MAX_ISSUES) {
    const more = out.length - MAX_ISSUES
    out.length = MAX_ISSUES
    out.push(`… and ${more} more`)
  }
  return out
}

/**
 * Validates a rule set and normalises it. A set with any problem is refused whole.
 *
 * @param input - A list of rules as plain data (parsed JSON or YAML, or objects in code).
 * @returns The normalised rules, frozen, in the order given.
 * @throws RulesValidationError listing every problem as `rules[2].limit: expected a positive integer, got -1`.
 * @example
 * ```ts
 * const rules = parseRules([
 *   { id: 'api', match: '/api/**', key: 'user', rate: '100/1m' },
 *   { id: 'export', match: 'POST /export', limit: 5, window: '1h', onLimit: { action: 'reject', status: 503 } },
 * ])
 * ```
 */
export function parseRules(input: unknown): Rule[] {
  const result = rulesSchema.safeParse(input, { reportInput: true })
  if (!result.success) throw new RulesValidationError(toMessages(result.error, 'rules'))
  return result.data
}

/**
 * Validates one rule (for a rules service endpoint that stores rules one by one). Ids are
 * checked for uniqueness only by {@link parseRules}.
 *
 * @param input - One rule as plain data.
 * @param path - The name used at the start of each error message.
 * @returns The normalised rule.
 * @throws RulesValidationError naming each problem, e.g. `rule.limit: expected a positive integer, got 0`.
 */
export function parseRule(input: unknown, path = 'rule'): Rule {
  const result = ruleSchema.safeParse(input, { reportInput: true })
  if (!result.success) throw new RulesValidationError(toMessages(result.error, path))
  return result.data
}

/** A rule set as a file or the rules service holds it, with its revision when known. */
export interface RulesDocument {
  readonly rules: Rule[]
  readonly revision?: string | undefined
  readonly service?: string | undefined
}

const documentSchema = z.object(
  {
    service: z.string(err('a string')).optional(),
    revision: z.union([z.string(), z.number()], err('a string or a number')).optional(),
    rules: z.array(z.unknown(), err(E.rules)),
  },
  err("a list of rules, or an object with a 'rules' list"),
)

/**
 * Validates a rules document: either a bare list of rules, or `{ service?, revision?, rules }`
 * (what the rules service serves at `GET /v1/services/:service/ruleset`).
 *
 * @param input - Parsed JSON or YAML.
 * @returns The normalised rules and the revision, when the document has one.
 * @throws RulesValidationError as {@link parseRules} does.
 */
export function parseRulesDocument(input: unknown): RulesDocument {
  if (Array.isArray(input)) return { rules: parseRules(input) }
  const doc = documentSchema.safeParse(input, { reportInput: true })
  if (!doc.success) throw new RulesValidationError(toMessages(doc.error, 'ruleset'))
  const { service, revision } = doc.data
  return {
    rules: parseRules(doc.data.rules),
    revision: revision === undefined ? undefined : String(revision),
    service,
  }
}
