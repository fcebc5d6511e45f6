import { z } from 'zod'
import type { AlgorithmName } from '../algorithms/algorithm.js'
import { RulesValidationError } from '../errors.js'
import type { FallbackKey, KeyPart, Rule, RuleMatch, RuleTier, RuleTiers } from './rule.js'
import {
  ALGORITHM_NAMES,
  BUCKET_ALGORITHMS,
  MAX_SLIDING_LOG_LIMIT,
  canReserve,
} from './algorithm-catalog.js'
import {
  E,
  ID,
  MAX_TIERS,
  count,
  duration,
  err,
  expected,
  key,
  match,
  onLimit,
  positiveInt,
  REJECT_429,
  rate,
  tiers,
  type TierInput,
} from './schema-fields.js'
import { toMessages } from './schema-issues.js'

export { MAX_DURATION_MS } from './schema-fields.js'

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
    count: count.optional(),
    tiers: tiers.optional(),
  },
  err(E.rule),
)

type Ctx = z.core.$RefinementCtx

interface Capacity {
  readonly algorithm: AlgorithmName
  readonly cost: number
}

/** Checks a limit and capacity against the algorithm; adds an issue at `path` for each problem. */
function checkCapacity(
  ctx: Ctx,
  c: Capacity,
  limit: number,
  burst: number,
  at: { limit: PropertyKey[]; cost: PropertyKey[] },
): void {
  if (c.algorithm === 'sliding-window-log' && limit > MAX_SLIDING_LOG_LIMIT) {
    expected(
      ctx,
      `a limit of at most ${MAX_SLIDING_LOG_LIMIT} for sliding-window-log, which stores a timestamp per request (sliding-window-counter scales to any limit)`,
      limit,
      at.limit,
    )
  }
  if (c.cost > burst) {
    expected(
      ctx,
      `a cost of at most the rule's capacity (${burst}); a dearer request could never pass`,
      c.cost,
      at.cost,
    )
  }
}

/** One tier completed: its window defaults to the rule's, its burst to its limit. */
function resolveTier(
  ctx: Ctx,
  name: string,
  t: TierInput,
  rule: Capacity & { readonly windowMs: number | undefined },
): RuleTier | undefined {
  const at = ['tiers', 'values', name]
  const concurrency = rule.algorithm === 'concurrency'
  let limit = t.limit
  let windowMs = t.window ?? rule.windowMs
  if (t.rate !== undefined) {
    if (t.limit !== undefined || t.window !== undefined) {
      ctx.addIssue({
        code: 'custom',
        message: 'either rate, or limit and window, not both',
        input: t.rate.text,
        path: [...at, 'rate'],
      })
      return undefined
    }
    limit = t.rate.limit
    windowMs = t.rate.windowMs
  }
  if (concurrency && (t.window !== undefined || t.rate !== undefined)) {
    expected(
      ctx,
      "no window for algorithm 'concurrency' (set limit: the requests in flight)",
      t.window ?? t.rate?.text,
      [...at, t.rate !== undefined ? 'rate' : 'window'],
    )
    return undefined
  }
  if (limit === undefined) {
    expected(ctx, E.posInt, undefined, [...at, 'limit'])
    return undefined
  }
  if (windowMs === undefined && !concurrency) {
    expected(ctx, `${E.duration} (the tier's, or the rule's window)`, undefined, [...at, 'window'])
    return undefined
  }
  const bucket = BUCKET_ALGORITHMS.has(rule.algorithm)
  if (t.burst !== undefined && !bucket) {
    expected(
      ctx,
      `no burst for algorithm '${rule.algorithm}' (only token-bucket, gcra and leaky-bucket have one)`,
      t.burst,
      [...at, 'burst'],
    )
    return undefined
  }
  const burst = bucket ? (t.burst ?? limit) : limit
  checkCapacity(ctx, rule, limit, burst, { limit: [...at, 'limit'], cost: ['cost'] })
  return Object.freeze({ limit, windowMs: windowMs ?? 0, burst })
}

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
  const cost = v.cost ?? 1
  let ruleTiers: RuleTiers | undefined
  let defaultTier: RuleTier | undefined
  if (v.tiers !== undefined) {
    const t = v.tiers
    const names = Object.keys(t.values)
    if (names.length === 0 || names.length > MAX_TIERS) {
      expected(ctx, `from 1 to ${MAX_TIERS} tiers`, t.values, ['tiers', 'values'])
    }
    const values: Record<string, RuleTier> = Object.create(null) as Record<string, RuleTier>
    let ok = true
    for (const name of names) {
      const tier = resolveTier(ctx, name, t.values[name]!, { algorithm, cost, windowMs })
      if (tier) values[name] = tier
      else ok = false
    }
    if (t.default !== undefined) {
      if (!Object.hasOwn(t.values, t.default)) {
        expected(ctx, `the name of a tier in values (${names.join(', ')})`, t.default, [
          'tiers',
          'default',
        ])
        ok = false
      } else if (v.limit !== undefined || v.rate !== undefined) {
        ctx.addIssue({
          code: 'custom',
          message:
            "either tiers.default, or a limit of the rule's own for requests without a known tier, not both",
          path: [v.limit !== undefined ? 'limit' : 'rate'],
          params: { raw: true },
        })
      }
      defaultTier = values[t.default]
    }
    if (ok) {
      ruleTiers = Object.freeze({ by: t.by, values: Object.freeze(values), default: t.default })
    }
  }
  if (defaultTier !== undefined) {
    limit = defaultTier.limit
    windowMs = defaultTier.windowMs
  }
  if (limit === undefined && v.tiers === undefined) expected(ctx, E.posInt, undefined, ['limit'])
  else if (limit === undefined && v.tiers?.default === undefined) {
    expected(
      ctx,
      `${E.posInt} for requests without a known tier (or name one with tiers.default)`,
      undefined,
      ['limit'],
    )
  }
  // A concurrency rule counts requests in flight; it has no window.
  if (windowMs === undefined && algorithm !== 'concurrency' && v.tiers?.default === undefined) {
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
  if (defaultTier !== undefined && v.burst !== undefined) {
    expected(
      ctx,
      "no burst of the rule's own when tiers.default names the tier (give the tier a burst)",
      v.burst,
      ['burst'],
    )
  }
  const burst = defaultTier?.burst ?? (bucket ? (v.burst ?? limit ?? 1) : (limit ?? 1))
  if (defaultTier === undefined && limit !== undefined) {
    checkCapacity(ctx, { algorithm, cost }, limit, burst, {
      limit: [v.rate !== undefined ? 'rate' : 'limit'],
      cost: ['cost'],
    })
  }
  const countMode = v.count ?? 'all'
  if (countMode !== 'all' && algorithm === 'concurrency') {
    expected(
      ctx,
      "'all' for algorithm 'concurrency' (a slot is given back when the request ends, whatever its outcome)",
      countMode,
      ['count'],
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
    count: countMode,
    ...(ruleTiers === undefined ? {} : { tiers: ruleTiers }),
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
