import type { AlgorithmParams } from '../algorithms/algorithm.js'
import { RulesValidationError } from '../errors.js'
import type { MatchFacts } from './match-facts.js'
import { findAlgorithm } from './algorithm-catalog.js'
import { banStatesOf } from './ban-states.js'
import type { CompiledRule, CompiledRules } from './compiled-rules.js'
import type { Rule } from './rule.js'
import { RuleMatcher, type RuleMatcherOptions } from './rule-matcher.js'

/** Options of {@link compileRules}. */
export type CompileRulesOptions = RuleMatcherOptions

/**
 * The identity of a rule's state: its id plus every parameter that changes how the state is
 * read. A rule that keeps these across a rules swap keeps its counters.
 */
export function stateIdOf(rule: Rule): string {
  // Ids cannot hold '|', so the parts cannot run into each other.
  return `${rule.id}|${rule.algorithm}|${rule.limit}|${rule.windowMs}|${rule.burst}`
}

class CompiledRuleSet implements CompiledRules {
  private readonly matcher: RuleMatcher

  constructor(
    readonly rules: readonly CompiledRule[],
    options: CompileRulesOptions | undefined,
  ) {
    this.matcher = new RuleMatcher(rules, options)
  }

  match(facts: MatchFacts): readonly CompiledRule[] {
    return this.matcher.match(facts)
  }

  /** Raw paths in the match cache (bounded); exposed for tests. */
  get cachedPaths(): number {
    return this.matcher.cachedPaths
  }
}

/**
 * Compiles validated rules (the output of `parseRules`) into a matcher, once per revision.
 *
 * Each rule gets its algorithm, its numeric params and its `stateId`; the matcher indexes the
 * rules by method and path so that `match()` costs a couple of Map lookups per request.
 *
 * @param rules - Validated rules, in declaration order.
 * @param options - Bounds of the match caches.
 * @returns The compiled rule set; `match(facts)` returns the rules that apply to a request.
 * @throws RulesValidationError when two rules share an id or a rule names an algorithm this
 * build does not have.
 * @example
 * ```ts
 * const compiled = compileRules(parseRules([{ id: 'api', match: '/api/**', rate: '10/s' }]))
 * compiled.match({ method: 'GET', path: '/api/users', ip: '1.2.3.4', headers: {} })
 * ```
 */
export function compileRules(
  rules: readonly Rule[],
  options?: CompileRulesOptions,
): CompiledRules & { readonly cachedPaths: number } {
  const issues: string[] = []
  const seen = new Map<string, number>()
  const compiled: CompiledRule[] = []
  rules.forEach((rule, i) => {
    const first = seen.get(rule.id)
    if (first !== undefined) {
      issues.push(`rules[${i}].id: duplicate id ${JSON.stringify(rule.id)} (also rules[${first}])`)
    } else seen.set(rule.id, i)
    const algorithm = findAlgorithm(rule.algorithm)
    if (!algorithm) {
      issues.push(
        `rules[${i}].algorithm: expected an algorithm this build provides, got ${JSON.stringify(rule.algorithm)}`,
      )
      return
    }
    const params: AlgorithmParams = Object.freeze({
      limit: rule.limit,
      windowMs: rule.windowMs,
      burst: rule.burst,
    })
    const ban = banStatesOf(rule)
    compiled.push(
      Object.freeze({
        rule,
        algorithm,
        params,
        stateId: stateIdOf(rule),
        ...(ban === undefined ? {} : { ban }),
      }),
    )
  })
  if (issues.length > 0) throw new RulesValidationError(issues)
  return new CompiledRuleSet(Object.freeze(compiled), options)
}
