import { RulesValidationError } from '../errors.js'
import type { JsonSchema } from './rule-json-schema.js'
import { BAD, type Bad, Checker, toMessages } from './schema-issues.js'

/** The outcome of {@link RuleSchema.safeParse}. */
export type SafeParseResult<T> =
  | { readonly success: true; readonly data: T }
  | { readonly success: false; readonly error: RulesValidationError }

/** A validator of rules as data, with the JSON Schema of what it accepts. */
export interface RuleSchema<T> {
  /**
   * Validates and normalises.
   * @throws RulesValidationError listing every problem as `path: expected …, got …`.
   */
  parse(input: unknown): T
  /** As {@link RuleSchema.parse}, but returns the error instead of throwing it. */
  safeParse(input: unknown): SafeParseResult<T>
  /**
   * The JSON Schema (draft 2020-12) of the input, for tools such as an OpenAPI document. It
   * describes the shapes; `parse` also refuses what it cannot say (e.g. duplicate ids).
   */
  toJSONSchema(): JsonSchema
}

export function schemaOf<T>(
  check: (input: unknown, c: Checker) => T | Bad,
  prefix: string,
  jsonSchema: () => JsonSchema,
): RuleSchema<T> {
  const safeParse = (input: unknown): SafeParseResult<T> => {
    const c = new Checker()
    const data = check(input, c)
    if (data === BAD) {
      return { success: false, error: new RulesValidationError(toMessages(c.all, prefix)) }
    }
    return { success: true, data }
  }
  return Object.freeze({
    safeParse,
    parse(input: unknown): T {
      const result = safeParse(input)
      if (!result.success) throw result.error
      return result.data
    },
    toJSONSchema: jsonSchema,
  })
}
