// Floodgate as a user installs it: the built package.
import { compileRules } from '@floodgate/core/rules'
import { parseRules } from '@floodgate/core'
export { createLimiter, MemoryStore } from '@floodgate/core'
export { systemClock } from '@floodgate/core/algorithms'

/** One compiled rule, as the limiter would hand it to the store. */
export function testRuleForBench(algorithm, limit, windowMs) {
  return compileRules(parseRules([{ id: 'bench', algorithm, limit, window: windowMs }])).rules[0]
}
