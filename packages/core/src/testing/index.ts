/**
 * @module @floodgate/core/testing
 * Conformance suites and reference models, for testing stores and adapters against core.
 */
export type { StoreConformanceOptions } from './conformance.js'
export { describeStoreConformance } from './conformance.js'
export type { TestRuleOptions } from './test-rule.js'
export { testRule } from './test-rule.js'
