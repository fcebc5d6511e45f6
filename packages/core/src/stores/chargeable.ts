import { misuseError } from '../options/checks.js'
import type { OptionsError } from '../errors.js'
import type { CompiledRule } from '../rules/compiled-rules.js'

/**
 * The error for charging units into debt under a rule whose algorithm cannot carry debt (only
 * token bucket and GCRA can).
 *
 * @param rule - The rule charged.
 * @returns An `OptionsError` naming the rule and its algorithm.
 */
export function unchargeableRule(rule: CompiledRule): OptionsError {
  return misuseError(
    `rule ${rule.rule.id}: algorithm ${rule.algorithm.name} cannot be charged units into debt (token-bucket and gcra can)`,
  )
}

/**
 * Check every entry of a penalty before any is charged: a store's `penalize` is all or
 * nothing, so one entry that cannot carry debt refuses the whole penalty.
 *
 * @param entries - The penalty's entries.
 * @throws OptionsError for the first entry whose algorithm cannot carry debt.
 */
export function checkChargeable(entries: readonly { readonly rule: CompiledRule }[]): void {
  for (const e of entries) if (!e.rule.algorithm.charge) throw unchargeableRule(e.rule)
}
