import type { CompiledRule } from './rules/compiled-rules.js'
import type { ConsumeEntry, RefundEntry } from './stores/store.js'
import type { RuleRuntime } from './limiter-rules.js'

/** A store entry plus the rule's runtime, so the decision needs no second lookup. */
export interface Entry extends ConsumeEntry {
  rule: CompiledRule
  key: string
  cost: number
  maxWaitMs: number
  shadow: boolean
  rt: RuleRuntime
  /** The queue place taken before asking the store, so concurrent checks cannot overfill it. */
  place: string | undefined
}

/** A copy of what the store needs to give an entry back: entry objects may be reused. */
export function refundOf(e: Entry): RefundEntry {
  return { rule: e.rule, key: e.key, cost: e.cost }
}
