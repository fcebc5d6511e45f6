import type { FallbackKey, OverLimit, Rule, RuleAdaptive, RuleAlgorithm } from './rule.js'
import { EA } from './schema-adaptive.js'

import { BAD, type Bad, type Checker } from './schema-issues.js'
import { isObject, type Fields } from './schema-object.js'
import { DEFAULT_KEY, EVERYTHING, type ruleFields } from './schema-rule-fields.js'

const REJECT_503: OverLimit = Object.freeze({ action: 'reject', status: 503 })

/** Whether the rule as written leaves the refusal status to the algorithm's default. */
function statusLeftOut(input: Record<string, unknown>): boolean {
  const over = Object.hasOwn(input, 'onLimit') ? input.onLimit : undefined
  if (over === undefined || over === 'reject') return true
  return isObject(over) && over.action === 'reject' && !Object.hasOwn(over, 'status')
}

/** The rule fields an adaptive rule has no use for: its limit moves on its own. */
const NOT_ADAPTIVE = ['limit', 'window', 'rate', 'burst', 'tiers'] as const

/**
 * Checks a rule with `algorithm: 'adaptive'` (or with `adaptive` settings): the settings are
 * required for that algorithm and refused for the others; a fixed limit, a window, tiers or a
 * queue are refused; an unstated refusal status is 503 (the service is overloaded, not the
 * client over a quota).
 */
export function checkAdaptiveRule(
  input: Record<string, unknown>,
  c: Checker,
  v: Fields<typeof ruleFields>,
  algorithm: RuleAlgorithm | undefined,
  present: (name: keyof typeof ruleFields) => boolean,
  before: number,
): Rule | Bad {
  if (algorithm !== 'adaptive') {
    if (algorithm !== undefined) {
      c.expected(
        `no adaptive settings for algorithm '${algorithm}' (they belong to algorithm: 'adaptive')`,
        input.adaptive,
        ['adaptive'],
      )
    }
    return BAD
  }
  if (!present('adaptive')) c.expected(EA.adaptive, undefined, ['adaptive'])
  for (const name of NOT_ADAPTIVE) {
    if (present(name)) {
      c.expected(
        `no ${name} for algorithm 'adaptive' (its limit moves between adaptive.minLimit and adaptive.maxLimit)`,
        input[name],
        [name],
      )
    }
  }
  if (v.count !== undefined && v.count !== 'all') {
    c.expected(
      "'all' for algorithm 'adaptive' (a slot is given back when the request ends, whatever its outcome)",
      v.count,
      ['count'],
    )
  }
  const settings: RuleAdaptive | undefined = v.adaptive
  const over = statusLeftOut(input) ? REJECT_503 : v.onLimit
  if (over?.action === 'queue') {
    c.expected(
      "'reject' or 'drop': an adaptive rule sheds load at once rather than queue it",
      'queue',
      ['onLimit', 'action'],
    )
  }
  const cost = v.cost ?? 1
  if (settings && v.cost !== undefined && cost > settings.minLimit) {
    c.expected(
      `a cost of at most adaptive.minLimit (${settings.minLimit}); a dearer request could be refused at every limit`,
      cost,
      ['cost'],
    )
  }
  if (c.count !== before || !settings || !over) return BAD
  return Object.freeze({
    id: v.id!,
    description: v.description,
    match: v.match ?? EVERYTHING,
    key: v.key ?? DEFAULT_KEY,
    fallbackKey: (v.fallbackKey ?? 'ip') satisfies FallbackKey,
    algorithm,
    limit: settings.maxLimit,
    windowMs: settings.windowMs,
    burst: settings.maxLimit,
    cost,
    onLimit: over,
    shadow: v.shadow ?? false,
    count: 'all',
    ...(v.ban === undefined ? {} : { ban: v.ban }),
    adaptive: settings,
  })
}
