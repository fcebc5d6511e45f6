import type { Decision } from './decision.js'
import type { KeyBuilderFailed, KeyBuilders } from './keys/build-key.js'
import type { DecisionCounts } from './limiter-counters.js'
import { CompiledAccessList } from './lists/access-list.js'
import type { RequestFacts } from './request-facts.js'
import type { Rule, RuleDenyList } from './rules/rule.js'

/** Makes the refusal a client on a rule's deny list gets (the limiter's listed refusal). */
export type DenyRefusal = (status: RuleDenyList['status'], rule: Rule) => Decision

/** A rule's deny list compiled, with the refusal a listed client gets. */
export interface RuleDeny {
  readonly list: CompiledAccessList
  readonly decision: Decision
}

/** A rule's `deny` and `allow` lists compiled, when it has them. */
export interface RuleLists {
  readonly deny: RuleDeny | undefined
  readonly allow: CompiledAccessList | undefined
}

/** What the list checks read of a rule's runtime: its rule, its lists, and its counters. */
interface Listed {
  readonly compiled: { readonly rule: Rule }
  readonly lists: RuleLists
  readonly counts: DecisionCounts
}

/**
 * Compile a rule's lists once per rule set.
 *
 * @param rule - a validated rule
 * @param builders - the limiter's key builders
 * @param path - where the rule sits, for messages (`rules[2]`)
 * @param refusal - makes the decision a denied client gets
 * @param failed - told when a builder throws or answers something that is not a key
 * @returns the compiled lists
 * @throws FloodgateError FG_ERR_KEY_BUILDER_UNKNOWN when a list names a key part whose builder
 * is not registered (the rule set is then refused whole)
 */
export function compileRuleLists<Req>(
  rule: Rule,
  builders: KeyBuilders<Req>,
  path: string,
  refusal: DenyRefusal,
  failed?: KeyBuilderFailed,
): RuleLists {
  const deny = rule.deny
  return {
    deny: deny && {
      list: CompiledAccessList.build(deny, builders, `${path}.deny`, failed),
      decision: refusal(deny.status, rule),
    },
    allow: rule.allow && CompiledAccessList.build(rule.allow, builders, `${path}.allow`, failed),
  }
}

/**
 * The refusal of a client that a matched rule's deny list names, before anything is counted;
 * undefined when none does. Counted as a denied refusal of that rule (as a shadow refusal of
 * a shadow rule, which refuses nothing).
 */
export function deniedByRules(rts: readonly Listed[], facts: RequestFacts): Decision | undefined {
  for (let i = 0; i < rts.length; i++) {
    const rt = rts[i]!
    const deny = rt.lists.deny
    if (deny !== undefined && deny.list.has(facts)) {
      // A shadow rule reports what its list would refuse, and refuses nothing.
      if (rt.compiled.rule.shadow) {
        rt.counts.shadowRejected++
        continue
      }
      rt.counts.denied++
      rt.counts.rejected++
      return deny.decision
    }
  }
  return undefined
}

/**
 * Whether the rule's allow list names the client, so the rule does not count it (counted as
 * an allow-listed pass of that rule).
 */
export function allowedByRule(rt: Listed, facts: RequestFacts): boolean {
  const allow = rt.lists.allow
  if (allow === undefined || !allow.has(facts)) return false
  rt.counts.allowListed++
  rt.counts.allowed++
  return true
}

/** Whether a rule's allow list names the client (the request no rule counted was allow-listed). */
export function allowListedByAny(rts: readonly Listed[], facts: RequestFacts): boolean {
  return rts.some((rt) => rt.lists.allow?.has(facts) === true)
}
