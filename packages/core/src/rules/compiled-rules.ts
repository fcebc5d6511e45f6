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
  /** The states of the rule's ban, when it has one and is enforced (not shadow). */
  readonly ban?: CompiledBan | undefined
}

/**
 * A ban kept as two more states of the client, so every store that can decide a rule can keep
 * it without knowing what a ban is:
 *
 * - `refusals`: a sliding-window-log of `after` units over `withinMs`, charged one unit per
 *   refusal; the refusal that uses its last unit (or finds none left) starts a ban;
 * - `block`: a token bucket of one unit per `forMs`. A ban resets it and charges it two units
 *   (one unit of debt); a request is checked against it at cost 0, which it refuses while the
 *   debt lasts (exactly `forMs`), with the time left as its `retryAfterMs`.
 */
export interface CompiledBan {
  readonly refusals: CompiledRule
  readonly block: CompiledRule
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
