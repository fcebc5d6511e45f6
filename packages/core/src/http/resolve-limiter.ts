import { optionError, optionsConflict } from '../options/checks.js'
import { createLimiter, type Limiter, type LimiterOptions } from '../limiter.js'
import type { Logger } from '../logger.js'
import type { RulesSource } from '../rules/sources/rules-source.js'
import type { RuleInput } from '../rules/schema.js'
import { LIMITER_OPTION_KEYS, type AdapterLimiterOptions } from './adapter-options.js'

/**
 * What an adapter limits with: rule inputs, a `RulesSource` (file, rules service), or a
 * prebuilt `Limiter` shared by several mounts or adapters.
 */
export type LimiterInput<Req> = readonly RuleInput[] | RulesSource | Limiter<Req>

/**
 * True when `value` is a core `Limiter` (it has `check`, `release` and `waitInQueue`).
 *
 * @param value - anything
 * @returns whether it can be used as a limiter
 */
export function isLimiter<Req>(value: unknown): value is Limiter<Req> {
  if (typeof value !== 'object' || value === null) return false
  const v = value as Record<string, unknown>
  return (
    typeof v['check'] === 'function' &&
    typeof v['release'] === 'function' &&
    typeof v['waitInQueue'] === 'function'
  )
}

/**
 * The limiter an adapter mount uses: the shared `Limiter` when given one, else a new limiter
 * built from the rules (or rules source) and the limiter options among `options`.
 *
 * @param input - rules, a rules source, or a limiter
 * @param options - the adapter's options; limiter options (`store`, `keys`, …) are used only
 * when a limiter is built here
 * @param logger - the logger for a limiter built here
 * @returns the limiter, and whether this mount owns it (and so should close it)
 * @throws OptionsError when a shared limiter comes with limiter options, which it would ignore
 * @throws RulesValidationError when the rules are invalid
 */
export function resolveLimiter<Req>(
  input: LimiterInput<Req>,
  options: AdapterLimiterOptions<Req>,
  logger: Logger | undefined,
): { readonly limiter: Limiter<Req>; readonly owned: boolean } {
  if (isLimiter<Req>(input)) {
    const given = LIMITER_OPTION_KEYS.filter(
      (k) => (options as Record<string, unknown>)[k] !== undefined,
    )
    if (given.length > 0) {
      throw optionsConflict(
        `options.${given[0]}: a shared Limiter was given, which has its own ${given.join(', ')}; configure the Limiter instead`,
      )
    }
    return { limiter: input, owned: false }
  }
  if (input === undefined || input === null || typeof input !== 'object') {
    throw optionError('rules', 'an array of rules, a RulesSource or a Limiter', input)
  }
  const limiterOptions: LimiterOptions<Req> = { rules: input }
  const o = options as Record<string, unknown>
  const out = limiterOptions as unknown as Record<string, unknown>
  for (const k of LIMITER_OPTION_KEYS) if (o[k] !== undefined) out[k] = o[k]
  if (logger) out['logger'] = logger
  return { limiter: createLimiter<Req>(limiterOptions), owned: true }
}
