import { RulesValidationError } from '../errors.js'
import type { CountMode, FallbackKey, Rule, RuleAlgorithm, RuleTier, RuleTiers } from './rule.js'
import {
  BUCKET_ALGORITHMS,
  MAX_SLIDING_LOG_LIMIT,
  canReserve,
  bucketOutOfRange,
  limitTooLarge,
} from './algorithm-catalog.js'
import { ruleJsonSchema, rulesJsonSchema } from './rule-json-schema.js'
import { E, REJECT_429 } from './schema-fields.js'
import { BAD, type Bad, Checker, toMessages } from './schema-issues.js'
import { resolveTier } from './schema-tiers.js'
import { schemaOf, type RuleSchema } from './schema-validator.js'
import { checkFields, isObject } from './schema-object.js'
import { checkAdaptiveRule } from './schema-adaptive-rule.js'
import { DEFAULT_KEY, EVERYTHING, ruleFields } from './schema-rule-fields.js'
export type { RuleInput } from './schema-rule-fields.js'

export { MAX_DURATION_MS } from './schema-fields.js'
export type { JsonSchema, JsonValue } from './rule-json-schema.js'
export type { RuleSchema, SafeParseResult } from './schema-validator.js'

/**
 * Checks one rule: each field, then the rules between fields. A rule between fields is
 * checked when the fields it reads passed, whatever the others hold, so every problem is
 * reported at once and none is a consequence of another.
 */
function checkRule(input: unknown, c: Checker): Rule | Bad {
  if (!isObject(input)) return c.expected(E.rule, input)
  const before = c.count
  const { fields: v, failed } = checkFields(input, ruleFields, c, ['id'])
  const present = (name: keyof typeof ruleFields): boolean =>
    v[name] !== undefined || failed.has(name)
  // A rule's lists act on the requests it matches; with `match: false` it matches none, and
  // limiter.limit() reads no list: such a list would be kept and never used.
  if (v.match === false) {
    for (const name of ['deny', 'allow'] as const) {
      if (present(name)) {
        c.expected(
          `no ${name} list on a rule with match: false (a rule's lists apply to the HTTP requests it matches, and it matches none)`,
          input[name],
          [name],
        )
      }
    }
  }
  // Known when the fields it comes from passed (or are absent and have a default).
  const algorithm: RuleAlgorithm | undefined = failed.has('algorithm')
    ? undefined
    : (v.algorithm ?? 'token-bucket')
  if (algorithm === 'adaptive' || present('adaptive')) {
    return checkAdaptiveRule(input, c, v, algorithm, present, before)
  }
  if (v.rate !== undefined) {
    if (present('limit') || present('window')) {
      c.expected('either rate, or limit and window, not both', v.rate.text, ['rate'])
    } else if (algorithm === 'concurrency') {
      c.expected(
        "no rate for algorithm 'concurrency' (set limit: the requests in flight)",
        v.rate.text,
        ['rate'],
      )
    }
  }
  const ownLimit = v.rate?.limit ?? v.limit
  const ownWindowMs = v.rate?.windowMs ?? v.window
  const cost = v.cost ?? 1
  const costKnown = !failed.has('cost')
  const queueMs = v.onLimit?.action === 'queue' ? v.onLimit.maxWaitMs : 0
  // The tiers, when they and the fields they depend on passed.
  let ruleTiers: RuleTiers | undefined
  let defaultTier: RuleTier | undefined
  const tiersKnown = !failed.has('tiers')
  const t = v.tiers
  if (t !== undefined && algorithm) {
    const windowKnown = !failed.has('window') && !failed.has('rate')
    const values = Object.create(null) as Record<string, RuleTier>
    let ok = windowKnown
    for (const [name, input] of Object.entries(t.values)) {
      const at = c.at('tiers', 'values', name)
      const r = {
        algorithm,
        cost: costKnown ? cost : undefined,
        windowMs: ownWindowMs,
        maxWaitMs: queueMs,
      }
      // Without the rule's window known, a tier that borrows it cannot be judged.
      if (!windowKnown && input.window === undefined && input.rate === undefined) continue
      const tier = resolveTier(at, c, input, r)
      if (tier) values[name] = tier
      else ok = false
    }
    if (t.default !== undefined) {
      defaultTier = values[t.default]
      if (present('limit') || present('rate')) {
        c.say(
          "either tiers.default, or a limit of the rule's own for requests without a known tier, not both",
          [present('limit') ? 'limit' : 'rate'],
        )
      }
      if (present('burst')) {
        c.expected(
          "no burst of the rule's own when tiers.default names the tier (give the tier a burst)",
          v.burst,
          ['burst'],
        )
      }
    }
    if (ok) {
      ruleTiers = Object.freeze({ by: t.by, values: Object.freeze(values), default: t.default })
    }
  }
  const byDefault = t?.default !== undefined
  const limit = defaultTier?.limit ?? ownLimit
  const windowMs = defaultTier?.windowMs ?? ownWindowMs
  if (!present('limit') && !present('rate') && tiersKnown && !byDefault) {
    if (t === undefined) c.expected(E.posInt, undefined, ['limit'])
    else {
      c.expected(
        `${E.posInt} for requests without a known tier (or name one with tiers.default)`,
        undefined,
        ['limit'],
      )
    }
  }
  // A concurrency rule counts requests in flight; it has no window.
  if (
    !present('window') &&
    !present('rate') &&
    tiersKnown &&
    !byDefault &&
    algorithm &&
    algorithm !== 'concurrency'
  ) {
    c.expected(E.duration, undefined, ['window'])
  }
  const bucket = algorithm !== undefined && BUCKET_ALGORITHMS.has(algorithm)
  if (v.burst !== undefined && algorithm && !bucket) {
    c.expected(
      `no burst for algorithm '${algorithm}' (only token-bucket, gcra and leaky-bucket have one)`,
      v.burst,
      ['burst'],
    )
  }
  if (algorithm !== undefined && ownLimit !== undefined && limitTooLarge(algorithm, ownLimit)) {
    c.expected(
      `a limit of at most ${MAX_SLIDING_LOG_LIMIT} for sliding-window-log, which stores a timestamp per request (sliding-window-counter scales to any limit)`,
      ownLimit,
      [v.rate !== undefined ? 'rate' : 'limit'],
    )
  }
  // The capacity: burst for the bucket algorithms (limit by default), else the limit; the
  // default tier's, whose own capacity was checked with the tier.
  const ownCapacity = algorithm && (bucket ? (v.burst ?? ownLimit) : ownLimit)
  const capacity = defaultTier?.burst ?? ownCapacity
  const capacityKnown = !failed.has('burst') && !failed.has('limit') && !failed.has('rate')
  if (
    defaultTier === undefined &&
    ownCapacity !== undefined &&
    capacityKnown &&
    costKnown &&
    cost > ownCapacity
  ) {
    c.expected(
      `a cost of at most the rule's capacity (${ownCapacity}); a dearer request could never pass`,
      cost,
      ['cost'],
    )
  }
  // Past the range a bucket's arithmetic is exact in, it would decide by float rounding.
  const range =
    defaultTier === undefined &&
    algorithm &&
    ownLimit !== undefined &&
    ownWindowMs !== undefined &&
    ownCapacity !== undefined &&
    capacityKnown
      ? bucketOutOfRange(algorithm, ownLimit, ownWindowMs, ownCapacity, queueMs)
      : undefined
  if (range?.field === 'burst') {
    const field = v.burst !== undefined ? 'burst' : v.rate !== undefined ? 'rate' : 'limit'
    c.expected(range.expected, field === 'rate' ? v.rate!.text : ownCapacity, [field])
  } else if (range) c.expected(range.expected, queueMs, ['onLimit', 'maxWait'])
  const countMode: CountMode = v.count ?? 'all'
  if (countMode !== 'all' && algorithm === 'concurrency') {
    c.expected(
      "'all' for algorithm 'concurrency' (a slot is given back when the request ends, whatever its outcome)",
      countMode,
      ['count'],
    )
  }
  const over = v.onLimit ?? REJECT_429
  if (over.action === 'queue' && algorithm && !canReserve(algorithm)) {
    c.expected(
      `'reject' or 'drop': algorithm '${algorithm}' cannot reserve capacity, so it cannot queue`,
      'queue',
      ['onLimit', 'action'],
    )
  }
  if (c.count !== before || !algorithm || limit === undefined || capacity === undefined) return BAD
  return Object.freeze({
    id: v.id!,
    description: v.description,
    ...(v.deny === undefined ? {} : { deny: v.deny }),
    ...(v.allow === undefined ? {} : { allow: v.allow }),
    match: v.match ?? EVERYTHING,
    key: v.key ?? DEFAULT_KEY,
    fallbackKey: (v.fallbackKey ?? 'ip') satisfies FallbackKey,
    algorithm,
    limit,
    windowMs: windowMs ?? 0,
    burst: capacity,
    cost,
    onLimit: over,
    shadow: v.shadow ?? false,
    count: countMode,
    ...(v.ban === undefined ? {} : { ban: v.ban }),
    ...(ruleTiers === undefined ? {} : { tiers: ruleTiers }),
  })
}

/** Checks a rule set: every rule, then that ids are unique (also among rules that failed). */
function checkRules(input: unknown, c: Checker): Rule[] | Bad {
  if (!Array.isArray(input)) return c.expected(E.rules, input)
  const before = c.count
  const rules = input.map((r: unknown, i) => checkRule(r, c.at(i)))
  const seen = new Map<string, number>()
  input.forEach((r: unknown, i) => {
    const id = isObject(r) && Object.hasOwn(r, 'id') ? r.id : undefined
    if (typeof id !== 'string') return
    const first = seen.get(id)
    if (first === undefined) seen.set(id, i)
    else c.say(`duplicate id ${JSON.stringify(id)} (also rules[${first}])`, [i, 'id'])
  })
  return c.count === before ? (rules as Rule[]) : BAD
}

/**
 * The schema of one rule: plain data (JSON or YAML) in, a normalised {@link Rule} out, with
 * every default filled in and durations in milliseconds. Core, the rules service and the
 * adapters all validate with this one schema. Its errors are named `rule.…`.
 */
export const ruleSchema: RuleSchema<Rule> = schemaOf(checkRule, 'rule', ruleJsonSchema)

/** A rule set: a list of rules with unique ids. Its errors are named `rules[i].…`. */
export const rulesSchema: RuleSchema<Rule[]> = schemaOf(checkRules, 'rules', rulesJsonSchema)

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
  return rulesSchema.parse(input)
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
export function parseRule(input: unknown, path: string = 'rule'): Rule {
  const c = new Checker()
  const rule = checkRule(input, c)
  if (rule === BAD) throw new RulesValidationError(toMessages(c.all, path))
  return rule
}
