import type { AlgorithmParams } from '../algorithms/algorithm.js'
import { slidingWindowLog, tokenBucket } from '../algorithms/registry.js'
import type { CompiledBan } from './compiled-rules.js'
import type { Rule } from './rule.js'

/** Units a ban charges its block state: one unit of debt over a capacity of one. */
export const BAN_CHARGE = 2

/**
 * The states of a rule's ban (see {@link CompiledBan}), or undefined when the rule has no ban
 * or is a shadow rule (which never refuses, so never bans). Their state ids depend on the ban
 * alone: a rules swap that changes the rule's limit keeps its clients' bans and refusals.
 *
 * @param rule - A validated rule.
 * @returns The ban's compiled states.
 */
export function banStatesOf(rule: Rule): CompiledBan | undefined {
  const ban = rule.ban
  if (ban === undefined || rule.shadow) return undefined
  const counted: AlgorithmParams = Object.freeze({
    limit: ban.after,
    windowMs: ban.withinMs,
    burst: ban.after,
  })
  const blocked: AlgorithmParams = Object.freeze({ limit: 1, windowMs: ban.forMs, burst: 1 })
  return Object.freeze({
    refusals: Object.freeze({
      rule,
      algorithm: slidingWindowLog,
      params: counted,
      // Ids cannot hold '|' or '#', so these never equal a rule's own state id.
      stateId: `${rule.id}#ban-refusals|${ban.after}|${ban.withinMs}`,
    }),
    block: Object.freeze({
      rule,
      algorithm: tokenBucket,
      params: blocked,
      stateId: `${rule.id}#ban|${ban.forMs}`,
    }),
  })
}
