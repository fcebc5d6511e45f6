import type { Rule } from '../rule.js'

/**
 * Where a limiter gets its rules from: static data, a file, or the rules service. A source
 * validates what it loads and hands over only good rule sets; a bad one is reported through
 * `onError` and the previous rules stay in force.
 */
export interface RulesSource {
  /**
   * Start delivering rule sets. Resolves after the first load attempt, whether or not it
   * succeeded (a limiter keeps running with the rules it has).
   */
  start(onRules: (rules: Rule[], revision?: string) => void, onError: (err: Error) => void): Promise<void>
  /** Stop watching or polling. */
  stop(): void
}
