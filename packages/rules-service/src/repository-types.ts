import type { RuleBody } from './rule-bodies.js'

// What the rules repository stores and answers: services, rule sets, audit entries.

/** The whole rule set of a service: what a host's retriever polls. */
export interface Ruleset {
  service: string
  revision: number
  /**
   * This exact state of the set (`<revision>-<random tag>`; the ETag is it in quotes). Unlike
   * the revision it is never reused, even when the data is lost and the revisions start over.
   */
  version: string
  rules: RuleBody[]
}

/** One service and the size of its rule set. */
export interface ServiceSummary {
  name: string
  revision: number
  /** As {@link Ruleset.version}. */
  version: string
  rules: number
  updatedAt: string
}

/**
 * What an audit entry records: a change to one rule, or (`reorder`) a new order of the set's
 * rules, with `ruleId` null and the ids in their order as `before` and `after`.
 */
export type AuditAction = 'create' | 'replace' | 'patch' | 'delete' | 'reorder'

/**
 * One change to one rule (who, when, and the rule before and after), or one reordering. Every
 * revision has at least one entry, and replaying a revision's entries in id order on the
 * previous set gives the new one: bodies are set or removed in place, new rules go at the end,
 * and a `reorder` entry puts the rules in its `after` order.
 */
export interface AuditEntry {
  id: number
  service: string
  ruleId: string | null
  actor: string
  action: AuditAction
  /** The set's revision this change produced. */
  revision: number
  /** The rule before (null when created), or the ids' old order for `reorder`. */
  before: RuleBody | string[] | null
  /** The rule after (null when deleted), or the ids' new order for `reorder`. */
  after: RuleBody | string[] | null
  at: string
}

/**
 * Validates a whole rule set and returns its problems as `path: message` (none when valid).
 * The default wraps core's `parseRules`.
 */
export type RulesValidator = (rules: readonly unknown[]) => readonly string[]

/** The outcome of a change: the set's new version plus whether it changed. */
export interface Change {
  /** The new revision (unchanged when the write changed nothing). */
  revision: number
  /** The new version, as {@link Ruleset.version} (unchanged when the write changed nothing). */
  version: string
  /** False when the write left the set as it was (no revision bump, no audit). */
  changed: boolean
}
