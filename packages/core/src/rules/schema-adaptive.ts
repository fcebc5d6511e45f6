import type { RuleAdaptive } from './rule.js'
import { duration, positiveInt } from './schema-fields.js'
import { BAD, type Bad, type Checker } from './schema-issues.js'
import { ID } from './schema-fields.js'
import { checkFields, isObject, oneOf, type Field } from './schema-object.js'

// The `adaptive` field of a rule whose algorithm is 'adaptive': what the limit follows
// (a latency percentile, against a target or the measured baseline) and how far and how fast
// it may move. The defaults are documented in docs/adaptive.md.

/** The highest `maxLimit`: the requests in flight one host can be asked to hold. */
export const MAX_ADAPTIVE_LIMIT = 1_000_000

/** The defaults of the settings a rule leaves out. */
export const ADAPTIVE_DEFAULTS: Readonly<{
  percentile: 99
  tolerance: 1.5
  windowMs: 10000
  minLimit: 1
  maxLimit: 1000
  initialLimit: 20
  smoothing: 0.5
  maxDecrease: 0.5
  maxIncrease: 1
  minSamples: 20
  reserve: 0.2
}> = Object.freeze({
  percentile: 99,
  tolerance: 1.5,
  windowMs: 10_000,
  minLimit: 1,
  maxLimit: 1000,
  initialLimit: 20,
  smoothing: 0.5,
  maxDecrease: 0.5,
  maxIncrease: 1,
  minSamples: 20,
  reserve: 0.2,
})

/** What each setting expects, phrased to follow "expected" in an error message. */
export const EA = {
  adaptive:
    "an object like { target: '250ms', percentile: 99, window: '10s', minLimit: 5, maxLimit: 500 }",
  percentile: 'a percentile above 0 and below 100, like 99 or 99.9',
  tolerance: 'a number from 1.05 to 100 (how far above the baseline the percentile may go)',
  fraction: 'a number above 0 and at most 1',
  maxDecrease: 'a number above 0 and below 1',
  maxIncrease: 'a number above 0 and at most 10',
  reserve: 'a number from 0 to 0.9',
  limit: `a whole number from 1 to ${MAX_ADAPTIVE_LIMIT}` as string,
  gate: "a gate name of 1-64 letters, digits, '.', '_' or '-'",
  priority: "'normal' or 'background'",
} as const

const numberIn =
  (min: number, max: number, what: string, minOpen = false, maxOpen = false): Field<number> =>
  (value, c) =>
    typeof value === 'number' &&
    Number.isFinite(value) &&
    (minOpen ? value > min : value >= min) &&
    (maxOpen ? value < max : value <= max)
      ? value
      : c.expected(what, value)

const limitField: Field<number> = (value, c) => {
  const n = positiveInt(value, c)
  if (n === BAD) return BAD
  return n <= MAX_ADAPTIVE_LIMIT ? n : c.expected(EA.limit, value)
}

/** The check of each adaptive setting, by name (a type, not an interface: checkFields takes a record). */
type AdaptiveFields = {
  readonly percentile: Field<number>
  readonly target: Field<number>
  readonly tolerance: Field<number>
  readonly window: Field<number>
  readonly minLimit: Field<number>
  readonly maxLimit: Field<number>
  readonly initialLimit: Field<number>
  readonly smoothing: Field<number>
  readonly maxDecrease: Field<number>
  readonly maxIncrease: Field<number>
  readonly minSamples: Field<number>
  readonly reserve: Field<number>
  readonly gate: Field<string>
  readonly priority: Field<'normal' | 'background'>
}

/** The settings as written; `adaptive.*` in error messages. */
export const adaptiveFields: AdaptiveFields = {
  percentile: numberIn(0, 100, EA.percentile, true, true),
  target: duration,
  tolerance: numberIn(1.05, 100, EA.tolerance),
  window: duration,
  minLimit: limitField,
  maxLimit: limitField,
  initialLimit: limitField,
  smoothing: numberIn(0, 1, EA.fraction, true),
  maxDecrease: numberIn(0, 1, EA.maxDecrease, true, true),
  maxIncrease: numberIn(0, 10, EA.maxIncrease, true),
  minSamples: positiveInt,
  reserve: numberIn(0, 0.9, EA.reserve),
  gate: (value, c) =>
    typeof value === 'string' && ID.test(value) ? value : c.expected(EA.gate, value),
  priority: oneOf(['normal', 'background'], EA.priority),
} as const

/**
 * `adaptive: { … }`: each setting checked, the defaults filled in, and the limits in order
 * (`minLimit <= initialLimit <= maxLimit`). A `tolerance` beside a `target` is refused: with a
 * target there is no baseline for it to scale.
 */
export const adaptive: Field<RuleAdaptive> = (value, c: Checker): RuleAdaptive | Bad => {
  if (!isObject(value)) return c.expected(EA.adaptive, value)
  const { fields: v, failed, ok } = checkFields(value, adaptiveFields, c)
  const d = ADAPTIVE_DEFAULTS
  const minLimit = v.minLimit ?? d.minLimit
  const maxLimit = v.maxLimit ?? Math.max(d.maxLimit, minLimit)
  const initialLimit = v.initialLimit ?? Math.min(maxLimit, Math.max(minLimit, d.initialLimit))
  let fine = ok
  if (v.target !== undefined && v.tolerance !== undefined) {
    c.expected(
      'no tolerance beside a target (tolerance scales the measured baseline, which a target replaces)',
      v.tolerance,
      ['tolerance'],
    )
    fine = false
  }
  const limitsKnown = !failed.has('minLimit') && !failed.has('maxLimit')
  if (limitsKnown && minLimit > maxLimit) {
    c.expected(`a minLimit of at most maxLimit (${maxLimit})`, minLimit, ['minLimit'])
    fine = false
  } else if (limitsKnown && !failed.has('initialLimit')) {
    if (initialLimit < minLimit || initialLimit > maxLimit) {
      c.expected(
        `an initialLimit from minLimit (${minLimit}) to maxLimit (${maxLimit})`,
        initialLimit,
        ['initialLimit'],
      )
      fine = false
    }
  }
  if (!fine) return BAD
  return Object.freeze({
    percentile: v.percentile ?? d.percentile,
    targetMs: v.target,
    tolerance: v.tolerance ?? d.tolerance,
    windowMs: v.window ?? d.windowMs,
    minLimit,
    maxLimit,
    initialLimit,
    smoothing: v.smoothing ?? d.smoothing,
    maxDecrease: v.maxDecrease ?? d.maxDecrease,
    maxIncrease: v.maxIncrease ?? d.maxIncrease,
    minSamples: v.minSamples ?? d.minSamples,
    reserve: v.reserve ?? d.reserve,
    gate: v.gate,
    priority: v.priority ?? 'normal',
  })
}
