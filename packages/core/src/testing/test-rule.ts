import type { AlgorithmName, AlgorithmParams } from '../algorithms/algorithm.js'
import { getAlgorithm } from '../algorithms/registry.js'
import type { CompiledRule } from '../rules/compiled-rules.js'
import type { CountMode, OverLimit, Rule } from '../rules/rule.js'

/** Options of {@link testRule}. */
export interface TestRuleOptions {
  readonly id?: string
  readonly burst?: number
  readonly onLimit?: OverLimit
  readonly shadow?: boolean
  readonly count?: CountMode
}

let counter = 0

/**
 * A compiled rule built directly from an algorithm and its params, for store tests that do
 * not go through rule parsing. Each call gets a fresh `stateId` unless `id` is given.
 */
export function testRule(
  algorithm: AlgorithmName,
  limit: number,
  windowMs: number,
  options: TestRuleOptions = {},
): CompiledRule {
  const id = options.id ?? `t${++counter}-${Date.now().toString(36)}`
  const params: AlgorithmParams = { limit, windowMs, burst: options.burst ?? limit }
  const rule: Rule = {
    id,
    match: {},
    key: ['ip'],
    fallbackKey: 'ip',
    algorithm,
    limit,
    windowMs,
    burst: params.burst,
    cost: 1,
    onLimit: options.onLimit ?? { action: 'reject', status: 429 },
    shadow: options.shadow ?? false,
    count: options.count ?? 'all',
  }
  return {
    rule,
    algorithm: getAlgorithm(algorithm),
    params,
    stateId: `${id}:${algorithm}:${limit}:${windowMs}:${params.burst}`,
  }
}
