import { parseRules, type RuleInput } from '../schema.js'
import type { RulesSource } from './rules-source.js'

/**
 * A rules source for rules written in code. They are validated here, so a bad rule throws
 * at construction, at startup, not on a request.
 *
 * @param input - The rules as plain data.
 * @returns A source that delivers the rules once when started.
 * @throws RulesValidationError naming every problem.
 * @example
 * ```ts
 * const limiter = createLimiter({ rules: staticRules([{ id: 'all', rate: '100/1m' }]) })
 * ```
 */
export function staticRules(input: readonly RuleInput[]): RulesSource {
  const rules = parseRules(input)
  return {
    start(onRules) {
      onRules(rules)
      return Promise.resolve()
    },
    stop() {},
  }
}
