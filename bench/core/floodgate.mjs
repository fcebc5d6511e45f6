// Floodgate as a user installs it: the built package.
import { compileRules, parseRules } from '@floodgate/core'
export { createLimiter, MemoryStore, systemClock } from '@floodgate/core'

/** One compiled rule, as the limiter would hand it to the store. */
export function testRuleForBench(algorithm, limit, windowMs) {
  return compileRules(parseRules([{ id: 'bench', algorithm, limit, window: windowMs }])).rules[0]
}
