import { RulesValidationError } from '../errors.js'
import type { Rule } from './rule.js'
import { parseRules } from './schema.js'
import { E } from './schema-fields.js'
import { BAD, type Bad, Checker, toMessages } from './schema-issues.js'
import { isObject } from './schema-object.js'

/** A rule set as a file or the rules service holds it, with its revision when known. */
export interface RulesDocument {
  readonly rules: Rule[]
  readonly revision?: string | undefined
  readonly service?: string | undefined
}

interface DocumentFields {
  readonly service: string | undefined
  readonly revision: string | number | undefined
  readonly rules: unknown[]
}

// Not strict: a document may carry fields of its own (a comment, a generator's name).
function checkDocument(input: unknown, c: Checker): DocumentFields | Bad {
  if (!isObject(input))
    return c.expected("a list of rules, or an object with a 'rules' list", input)
  const own = (name: string): unknown => (Object.hasOwn(input, name) ? input[name] : undefined)
  const service = own('service')
  const revision = own('revision')
  const rules = own('rules')
  if (service !== undefined && typeof service !== 'string') {
    c.expected('a string', service, ['service'])
  }
  const finite = typeof revision === 'number' && Number.isFinite(revision)
  if (revision !== undefined && typeof revision !== 'string' && !finite) {
    c.expected('a string or a number', revision, ['revision'])
  }
  if (!Array.isArray(rules)) c.expected(E.rules, rules, ['rules'])
  if (c.count > 0) return BAD
  return { service, revision, rules } as DocumentFields
}

/**
 * Validates a rules document: either a bare list of rules, or `{ service?, revision?, rules }`
 * (what the rules service serves at `GET /v1/services/:service/ruleset`).
 *
 * @param input - Parsed JSON or YAML.
 * @returns The normalised rules and the revision, when the document has one.
 * @throws RulesValidationError as {@link parseRules} does.
 */
export function parseRulesDocument(input: unknown): RulesDocument {
  if (Array.isArray(input)) return { rules: parseRules(input) }
  const c = new Checker()
  const doc = checkDocument(input, c)
  if (doc === BAD) throw new RulesValidationError(toMessages(c.all, 'ruleset'))
  return {
    rules: parseRules(doc.rules),
    revision: doc.revision === undefined ? undefined : String(doc.revision),
    service: doc.service,
  }
}
