import type { Algorithm, AlgorithmParams } from '../algorithms/algorithm.js'
import type { MatchFacts } from './match-facts.js'
import type { Rule } from './rule.js'

/** A rule ready for the hot path: its algorithm and numeric params resolved once. */
export interface CompiledRule {
  readonly rule: Rule
  readonly algorithm: Algorithm
  readonly params: AlgorithmParams
  /**
   * Identity of the rule's state: the id plus everything that changes how state is read
   * (algorithm, limit, window, burst). Stores key state by it, so a rule that did not change
   * keeps its counters across a rules swap and a changed one starts fresh.
   */
  readonly stateId: string
}

/** A rule set compiled into a matcher, once per revision. */
export interface CompiledRules {
  readonly rules: readonly CompiledRule[]
  /**
   * The rules that apply to a request, in declaration order. Returns a shared, frozen array:
   * callers must not modify it.
   */
  match(facts: MatchFacts): readonly CompiledRule[]
}
