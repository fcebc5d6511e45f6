/**
 * @module @floodgate/core/adaptive
 * Adaptive rules (`algorithm: 'adaptive'`): the live state `limiter.adaptive(ruleId)` returns,
 * the settings a rule holds, and the control law that moves the limit, for dashboards,
 * metrics exporters and simulations.
 */
export type { AdaptiveState } from './adaptive-state.js'
export type { RuleAdaptive, RuleAlgorithm } from '../rules/rule.js'
export { nextControlState, type ControlState, type WindowStats } from './control-law.js'
export { ADAPTIVE_DEFAULTS } from '../rules/schema-adaptive.js'
