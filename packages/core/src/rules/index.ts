/**
 * `@floodgate/core/rules`: tools that work on rules as data, for services that store, edit
 * or serve them (the rules service is built on it): the schema (also as JSON Schema), the
 * whole-document parser, duration parsing and rule compilation. Applications use
 * `parseRules` and the rule sources from `@floodgate/core` instead.
 * @module @floodgate/core/rules
 */
export {
  MAX_DURATION_MS,
  parseRule,
  parseRules,
  ruleSchema,
  rulesSchema,
  type JsonSchema,
  type JsonValue,
  type RuleInput,
  type RuleSchema,
  type SafeParseResult,
} from './schema.js'
export { parseRulesDocument, type RulesDocument } from './schema-document.js'
export { compileRules, stateIdOf, type CompileRulesOptions } from './compile-rules.js'
export type { CompiledRule, CompiledRules } from './compiled-rules.js'
export type {
  CountMode,
  FallbackKey,
  KeyPart,
  OverLimit,
  Rule,
  RuleAccessList,
  RuleBan,
  RuleDenyList,
  RuleMatch,
  RuleTier,
  RuleTiers,
} from './rule.js'
export { canonicalPath } from './canonical-path.js'
export { decodeText } from './sources/decode-text.js'
export { duplicateJsonKey } from './sources/json-duplicate-keys.js'
export { parseDuration } from '../duration.js'
export type { LimitAnswer, LimitFunction, LimitFunctions } from '../limiter-limits.js'
export type { AccessList } from '../lists/access-list.js'
export type { HostReportOptions, ReportingLimiter } from './sources/host-report.js'
