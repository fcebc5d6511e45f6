import { RULE_ALGORITHM_NAMES } from './algorithm-catalog.js'
import { EA, MAX_ADAPTIVE_LIMIT } from './schema-adaptive.js'
import { E, ID, MAX_BAN_AFTER, MAX_DURATION_MS, MAX_TIERS, RULE_ID } from './schema-fields.js'
import { MAX_LIST_ENTRIES } from '../lists/access-list.js'
import { HEADER_VALUE_PATTERN } from './header-value.js'
import { DENY_STATUSES, LIST_E } from './schema-lists.js'

/** A JSON value, as a JSON Schema document is made of. */
export type JsonValue =
  null | boolean | number | string | readonly JsonValue[] | { readonly [key: string]: JsonValue }

/** A JSON Schema document. */
export type JsonSchema = { readonly [key: string]: JsonValue }

// The shapes a rule may take, for tools (the rules service's OpenAPI document, editors). The
// checks in schema.ts stay the authority: they also refuse what a JSON Schema cannot say,
// such as a bad path pattern, a cost above the capacity or a duplicate id. Each description
// is the check's own "expected …" text; a test keeps the fields of both in step.

const oneOrMore = (item: JsonSchema, description: string): JsonSchema => ({
  description,
  anyOf: [item, { type: 'array', items: item, minItems: 1 }],
})
const positiveInt: JsonSchema = {
  type: 'integer',
  exclusiveMinimum: 0,
  maximum: Number.MAX_SAFE_INTEGER,
  description: E.posInt,
}
const duration: JsonSchema = {
  description: E.duration,
  anyOf: [
    { type: 'string', pattern: '^\\d{1,15}(\\.\\d{1,9})?(ms|s|m|h|d)$' },
    { type: 'integer', exclusiveMinimum: 0, maximum: MAX_DURATION_MS },
  ],
}

const match: JsonSchema = {
  description: E.match,
  anyOf: [
    { type: 'string' },
    { const: false, description: 'No HTTP request: a rule used through limiter.limit()' },
    {
      type: 'object',
      properties: {
        methods: oneOrMore({ type: 'string', pattern: '^[A-Za-z]{1,20}$' }, E.methods),
        paths: oneOrMore({ type: 'string', pattern: '^/' }, E.paths),
        headers: {
          type: 'object',
          description: E.headers,
          additionalProperties: {
            anyOf: [{ type: 'string', pattern: HEADER_VALUE_PATTERN }, { const: true }],
          },
        },
        hosts: oneOrMore({ type: 'string' }, E.hosts),
      },
      additionalProperties: false,
    },
  ],
}

const onLimit: JsonSchema = {
  description: E.onLimit,
  anyOf: [
    { enum: ['reject', 'drop'] },
    {
      type: 'object',
      required: ['action'],
      properties: { action: { const: 'reject' }, status: { enum: [429, 503] } },
      additionalProperties: false,
    },
    {
      type: 'object',
      required: ['action', 'maxWait'],
      properties: { action: { const: 'queue' }, maxWait: duration, maxQueue: positiveInt },
      additionalProperties: false,
    },
    {
      type: 'object',
      required: ['action'],
      properties: { action: { const: 'drop' } },
      additionalProperties: false,
    },
  ],
}

const rate: JsonSchema = { type: 'string', pattern: '^\\d{1,15}/', description: E.rate }

const tiers: JsonSchema = {
  type: 'object',
  required: ['by', 'values'],
  properties: {
    by: { type: 'string', description: E.tierBy },
    values: {
      type: 'object',
      description: E.tierValues,
      minProperties: 1,
      maxProperties: MAX_TIERS,
      propertyNames: { pattern: '^[A-Za-z0-9._-]{1,64}$', not: { const: '__proto__' } },
      additionalProperties: {
        type: 'object',
        description: E.tier,
        properties: { limit: positiveInt, window: duration, rate, burst: positiveInt },
        additionalProperties: false,
      },
    },
    default: { type: 'string', description: E.tierName },
  },
  additionalProperties: false,
  description: E.tiers,
}

/**
 * The JSON Schema of a rule's `deny` (with `status`) or `allow` list. Whether an entry is an
 * address or CIDR range, and a key part's name, only the checks in schema-lists.ts say.
 *
 * @param withStatus - true for `deny`
 * @returns the schema
 */
function accessListJsonSchema(withStatus: boolean): JsonSchema {
  const strings = (description: string, minLength: number): JsonSchema => ({
    type: 'array',
    maxItems: MAX_LIST_ENTRIES,
    items: { type: 'string', minLength, maxLength: 1024 },
    description,
  })
  return {
    type: 'object',
    description: withStatus ? LIST_E.deny : LIST_E.allow,
    properties: {
      ips: strings(LIST_E.ips, 2),
      keys: {
        type: 'object',
        description: LIST_E.keys,
        propertyNames: {
          pattern: "^(user|header:[A-Za-z0-9!#$%&'*+.^_`|~-]{1,128}|custom:[A-Za-z0-9._-]{1,64})$",
        },
        additionalProperties: strings(LIST_E.values, 1),
      },
      ...(withStatus
        ? { status: { enum: [...DENY_STATUSES], description: LIST_E.denyStatus } }
        : {}),
    },
    anyOf: [{ required: ['ips'] }, { required: ['keys'] }],
    additionalProperties: false,
  }
}

const number = (description: string, range: Record<string, number>): JsonSchema => ({
  type: 'number',
  description,
  ...range,
})
const adaptiveLimit: JsonSchema = {
  type: 'integer',
  minimum: 1,
  maximum: MAX_ADAPTIVE_LIMIT,
  description: EA.limit,
}

const adaptive: JsonSchema = {
  type: 'object',
  description: EA.adaptive,
  properties: {
    percentile: number(EA.percentile, { exclusiveMinimum: 0, exclusiveMaximum: 100 }),
    target: duration,
    tolerance: number(EA.tolerance, { minimum: 1.05, maximum: 100 }),
    window: duration,
    minLimit: adaptiveLimit,
    maxLimit: adaptiveLimit,
    initialLimit: adaptiveLimit,
    smoothing: number(EA.fraction, { exclusiveMinimum: 0, maximum: 1 }),
    maxDecrease: number(EA.maxDecrease, { exclusiveMinimum: 0, exclusiveMaximum: 1 }),
    maxIncrease: number(EA.maxIncrease, { exclusiveMinimum: 0, maximum: 10 }),
    minSamples: positiveInt,
    reserve: number(EA.reserve, { minimum: 0, maximum: 0.9 }),
    gate: { type: 'string', pattern: ID.source, description: EA.gate },
    priority: { enum: ['normal', 'background'], description: EA.priority },
  },
  additionalProperties: false,
}

const RULE: JsonSchema = {
  $schema: 'https://json-schema.org/draft/2020-12/schema',
  type: 'object',
  required: ['id'],
  properties: {
    id: { type: 'string', pattern: RULE_ID.source, description: E.id },
    description: { type: 'string', maxLength: 1000, description: E.description },
    deny: accessListJsonSchema(true),
    allow: accessListJsonSchema(false),
    match,
    key: oneOrMore({ type: 'string' }, E.key),
    fallbackKey: { enum: ['ip', 'skip', 'shared'], description: E.fallbackKey },
    limit: positiveInt,
    window: duration,
    rate,
    algorithm: { enum: [...RULE_ALGORITHM_NAMES], description: E.algorithm },
    burst: positiveInt,
    cost: {
      type: 'number',
      exclusiveMinimum: 0,
      maximum: Number.MAX_SAFE_INTEGER,
      description: E.cost,
    },
    onLimit,
    shadow: { type: 'boolean', description: E.boolean },
    ban: {
      type: 'object',
      required: ['after', 'within', 'for'],
      properties: {
        after: { type: 'integer', minimum: 1, maximum: MAX_BAN_AFTER, description: E.banAfter },
        within: duration,
        for: duration,
      },
      additionalProperties: false,
      description: E.ban,
    },
    count: { enum: ['all', 'failed', 'successful'], description: E.count },
    tiers,
    adaptive,
  },
  additionalProperties: false,
}

/** The JSON Schema (draft 2020-12) of one rule as written; a fresh copy on each call. */
export function ruleJsonSchema(): JsonSchema {
  return structuredClone(RULE)
}

/** The JSON Schema of a rule set: a list of rules. */
export function rulesJsonSchema(): JsonSchema {
  const { $schema, ...rule } = ruleJsonSchema()
  return { $schema: $schema ?? null, type: 'array', items: rule, description: E.rules }
}
