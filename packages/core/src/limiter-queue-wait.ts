import type { CompiledRule } from './rules/compiled-rules.js'

/**
 * The longest a request may wait for its turn under a rule: the rule's `maxWait` when it queues,
 * else 0. Whether the client's queue has room is known only once the store has answered.
 * (A module of its own: the rule registry and the entries both read it.)
 */
export function queueWaitMs(rule: CompiledRule['rule']): number {
  return rule.onLimit.action === 'queue' ? rule.onLimit.maxWaitMs : 0
}
