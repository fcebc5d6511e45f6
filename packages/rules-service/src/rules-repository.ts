import type { Db, DbSession } from './db/db.js'
import {
  etagOf,
  preconditionFailure,
  versionOf,
  type SetVersion,
  type WriteConditions,
} from './etag.js'
import { ProblemError } from './problem.js'
import { diffRules, mergePatch, orderChange, type RuleBody } from './rule-bodies.js'
import type {
  AuditAction,
  AuditEntry,
  Change,
  Ruleset,
  RulesValidator,
  ServiceSummary,
} from './repository-types.js'
import { revisionCacheFor, type RevisionCache } from './revision-cache.js'
import { unknownService } from './unknown-service.js'

export type { RuleBody } from './rule-bodies.js'
export type * from './repository-types.js'

interface PlannedChange {
  /** The whole set after the change, in order. */
  next: RuleBody[]
  /** The action recorded for rules whose body changed. */
  action: (before: RuleBody | undefined, after: RuleBody | undefined) => AuditAction
}

const toVersion = (row: { revision: unknown; tag: unknown }): SetVersion => ({
  revision: Number(row.revision),
  tag: String(row.tag),
})

const toIso = (value: unknown): string =>
  value instanceof Date ? value.toISOString() : new Date(String(value)).toISOString()

/**
 * Storage of services, rules and the audit trail. Every write runs in one transaction that
 * locks the service row, checks the expected revision, validates the whole resulting set,
 * writes the rules, bumps the revision and appends the audit entries — or changes nothing.
 */
export class RulesRepository {
  readonly #db: Db
  readonly #validate: RulesValidator
  readonly #revisions: RevisionCache | undefined

  /**
   * @param db - the database (migrated)
   * @param validate - whole-set validator
   */
  constructor(db: Db, validate: RulesValidator) {
    this.#db = db
    this.#validate = validate
    this.#revisions = revisionCacheFor(db)
  }

  /** @returns every service, by name */
  async listServices(): Promise<ServiceSummary[]> {
    const rows = await this.#db.query<{
      name: string
      revision: unknown
      tag: unknown
      rules: unknown
      updated_at: unknown
    }>(
      `SELECT s.name, s.revision, s.tag, s.updated_at,
        (SELECT count(*) FROM rules r WHERE r.service = s.name) AS rules
       FROM services s ORDER BY s.name`,
    )
    return rows.map((r) => ({
      name: r.name,
      revision: Number(r.revision),
      version: versionOf(toVersion(r)),
      rules: Number(r.rules),
      updatedAt: toIso(r.updated_at),
    }))
  }

  /**
   * Create a service with an empty rule set (revision 0) unless it exists.
   *
   * @param name - the service name
   * @returns true when it was created
   */
  async ensureService(name: string): Promise<boolean> {
    const rows = await this.#db.query<{ revision: unknown; tag: unknown }>(
      'INSERT INTO services (name) VALUES ($1) ON CONFLICT (name) DO NOTHING RETURNING revision, tag',
      [name],
    )
    if (rows[0] !== undefined) this.#revisions?.note(name, toVersion(rows[0]))
    return rows.length > 0
  }

  /**
   * @param service - the service name
   * @returns its version (what its ETag names), or undefined when there is no such service
   */
  async version(service: string): Promise<string | undefined> {
    const cached = this.#revisions?.get(service)
    if (cached !== undefined) return versionOf(cached)
    const rows = await this.#db.query<{ revision: unknown; tag: unknown }>(
      'SELECT revision, tag FROM services WHERE name = $1',
      [service],
    )
    if (rows[0] === undefined) return undefined
    const version = toVersion(rows[0])
    this.#revisions?.note(service, version)
    return versionOf(version)
  }

  /**
   * Read a service's whole set in one statement, so the revision and the rules agree.
   *
   * @param service - the service name
   * @returns the set; throws a 404 problem for an unknown service
   */
  async ruleset(service: string): Promise<Ruleset> {
    const rows = await this.#db.query<{ revision: unknown; tag: unknown; body: RuleBody | null }>(
      `SELECT s.revision, s.tag, r.body FROM services s
       LEFT JOIN rules r ON r.service = s.name
       WHERE s.name = $1 ORDER BY r.position`,
      [service],
    )
    if (rows[0] === undefined) throw unknownService(service)
    return {
      service,
      revision: Number(rows[0].revision),
      version: versionOf(toVersion(rows[0])),
      rules: rows.flatMap((r) => (r.body === null ? [] : [r.body])),
    }
  }

  /**
   * @param service - the service name
   * @param id - the rule id
   * @returns the rule and the set's revision; 404 problems for an unknown service or rule
   */
  async rule(
    service: string,
    id: string,
  ): Promise<{ revision: number; version: string; rule: RuleBody }> {
    const set = await this.ruleset(service)
    const rule = set.rules.find((r) => r.id === id)
    if (!rule) throw unknownRule(service, id)
    return { revision: set.revision, version: set.version, rule }
  }

  /**
   * Add a rule at the end of the set.
   *
   * @param service - the service name
   * @param body - the rule
   * @param actor - who (the token's name), for the audit trail
   * @param conditions - the write's preconditions (If-Match, If-None-Match), if any; a list is
   * If-Match's tags
   */
  create(
    service: string,
    body: RuleBody,
    actor: string,
    conditions?: readonly string[] | WriteConditions,
  ): Promise<Change> {
    return this.#change(service, actor, conditions, undefined, (current) => {
      if (current.some((r) => r.id === body.id)) {
        throw new ProblemError(
          'conflict',
          `rule ${JSON.stringify(body.id)} already exists in service ${JSON.stringify(service)}; use PUT to replace it`,
        )
      }
      return { next: [...current, body], action: () => 'create' }
    })
  }

  /**
   * Replace a rule, or create it at the end of the set when it does not exist.
   *
   * @param service - the service name
   * @param id - the rule id (the body's id must equal it)
   * @param body - the new rule
   * @param actor - who, for the audit trail
   * @param conditions - the write's preconditions (If-Match, If-None-Match), if any; a list is
   * If-Match's tags
   * @returns the change, and whether the rule was created
   */
  async replace(
    service: string,
    id: string,
    body: RuleBody,
    actor: string,
    conditions?: readonly string[] | WriteConditions,
  ): Promise<Change & { created: boolean }> {
    let created = false
    const change = await this.#change(service, actor, conditions, id, (current) => {
      const index = current.findIndex((r) => r.id === id)
      const next = [...current]
      created = index < 0
      if (created) next.push(body)
      else next[index] = body
      return { next, action: (before) => (before === undefined ? 'create' : 'replace') }
    })
    return { ...change, created }
  }

  /**
   * Apply a JSON merge patch to a rule.
   *
   * @param service - the service name
   * @param id - the rule id
   * @param patch - RFC 7396 merge patch
   * @param actor - who, for the audit trail
   * @param conditions - the write's preconditions (If-Match, If-None-Match), if any; a list is
   * If-Match's tags
   * @param check - validates the patched body before the set is (400 problems)
   */
  patch(
    service: string,
    id: string,
    patch: Record<string, unknown>,
    actor: string,
    conditions: readonly string[] | WriteConditions | undefined,
    check: (patched: unknown) => RuleBody,
  ): Promise<Change> {
    return this.#change(service, actor, conditions, id, (current) => {
      const index = current.findIndex((r) => r.id === id)
      const before = current[index]
      if (before === undefined) throw unknownRule(service, id)
      const next = [...current]
      next[index] = check(mergePatch(before, patch))
      return { next, action: () => 'patch' }
    })
  }

  /**
   * Delete a rule.
   *
   * @param service - the service name
   * @param id - the rule id
   * @param actor - who, for the audit trail
   * @param conditions - the write's preconditions (If-Match, If-None-Match), if any; a list is
   * If-Match's tags
   */
  delete(
    service: string,
    id: string,
    actor: string,
    conditions?: readonly string[] | WriteConditions,
  ): Promise<Change> {
    return this.#change(service, actor, conditions, id, (current) => {
      if (!current.some((r) => r.id === id)) throw unknownRule(service, id)
      return { next: current.filter((r) => r.id !== id), action: () => 'delete' }
    })
  }

  /**
   * Replace the whole set (order included): rules missing from `rules` are deleted.
   *
   * @param service - the service name
   * @param rules - the new set
   * @param actor - who, for the audit trail
   * @param conditions - the write's preconditions (If-Match, If-None-Match), if any; a list is
   * If-Match's tags
   */
  replaceAll(
    service: string,
    rules: RuleBody[],
    actor: string,
    conditions?: readonly string[] | WriteConditions,
  ): Promise<Change> {
    return this.#change(service, actor, conditions, undefined, () => ({
      next: rules,
      action: (before, after) =>
        before === undefined ? 'create' : after === undefined ? 'delete' : 'replace',
    }))
  }

  /**
   * Read the audit trail, newest first.
   *
   * @param service - the service name
   * @param options - page size and cursor (entries with an id below `before`)
   * @returns the entries; a 404 problem for an unknown service
   */
  async audit(
    service: string,
    options: { limit?: number; before?: number; ruleId?: string } = {},
  ): Promise<AuditEntry[]> {
    if ((await this.version(service)) === undefined) throw unknownService(service)
    const rows = await this.#db.query<{
      id: unknown
      rule_id: string | null
      actor: string
      action: AuditAction
      revision: unknown
      before: RuleBody | string[] | null
      after: RuleBody | string[] | null
      at: unknown
    }>(
      `SELECT id, rule_id, actor, action, revision, before, after, at FROM audit
       WHERE service = $1 AND ($2::bigint IS NULL OR id < $2::bigint)
         AND ($3::text IS NULL OR rule_id = $3::text)
       ORDER BY id DESC LIMIT $4`,
      [service, options.before ?? null, options.ruleId ?? null, options.limit ?? 50],
    )
    return rows.map((r) => ({
      id: Number(r.id),
      service,
      ruleId: r.rule_id,
      actor: r.actor,
      action: r.action,
      revision: Number(r.revision),
      before: r.before,
      after: r.after,
      at: toIso(r.at),
    }))
  }

  async #change(
    service: string,
    actor: string,
    given: readonly string[] | WriteConditions | undefined,
    /** The rule the URL names, whose existence `*` asks about; undefined: the set (it exists). */
    target: string | undefined,
    plan: (current: RuleBody[]) => PlannedChange,
  ): Promise<Change> {
    const change = await this.#db.transaction(async (tx) => {
      // The row lock serialises writers of one service; readers are never blocked.
      const locked = await tx.query<{ revision: unknown; tag: unknown }>(
        'SELECT revision, tag FROM services WHERE name = $1 FOR UPDATE',
        [service],
      )
      if (locked[0] === undefined) throw unknownService(service)
      const current = toVersion(locked[0])
      const { revision } = current
      const version = versionOf(current)
      const rules = (
        await tx.query<{ body: RuleBody }>(
          'SELECT body FROM rules WHERE service = $1 ORDER BY position',
          [service],
        )
      ).map((r) => r.body)
      const conditions: WriteConditions = isTagList(given) ? { ifMatch: given } : (given ?? {})
      const exists = target === undefined || rules.some((r) => r.id === target)
      const failure = preconditionFailure(conditions, version, exists)
      if (failure !== undefined) {
        const subject =
          target === undefined
            ? `the rule set of ${JSON.stringify(service)}`
            : `rule ${JSON.stringify(target)} of ${JSON.stringify(service)}`
        throw new ProblemError(
          'precondition-failed',
          `${subject}: ${failure}; nothing was written (the set is at ${etagOf(version)}, revision ${revision}); reload and retry`,
          { revision, version },
        )
      }
      const { next, action } = plan(rules)
      this.#check(next)
      const entries = diffRules(rules, next)
      const order = orderChange(rules, next)
      if (entries.length === 0 && order === undefined) return { current, changed: false }
      const nextRevision = revision + 1
      await write(tx, service, rules, next)
      // A new random tag with every revision: see migration 2.
      const [updated] = await tx.query<{ tag: unknown }>(
        `UPDATE services SET revision = $2, tag = DEFAULT, updated_at = now() WHERE name = $1
         RETURNING tag`,
        [service, nextRevision],
      )
      for (const { id, before, after } of entries) {
        await tx.query(
          `INSERT INTO audit (service, rule_id, actor, action, revision, before, after)
           VALUES ($1, $2, $3, $4, $5, $6::jsonb, $7::jsonb)`,
          [
            service,
            id,
            actor,
            action(before, after),
            nextRevision,
            before === undefined ? null : JSON.stringify(before),
            after === undefined ? null : JSON.stringify(after),
          ],
        )
      }
      // Moving rules changes what hosts enforce first, so it is a change like any other: a
      // revision, and an entry that says who did it and the order before and after.
      if (order !== undefined) {
        await tx.query(
          `INSERT INTO audit (service, rule_id, actor, action, revision, before, after)
           VALUES ($1, NULL, $2, 'reorder', $3, $4::jsonb, $5::jsonb)`,
          [service, actor, nextRevision, JSON.stringify(order.before), JSON.stringify(order.after)],
        )
      }
      return { current: { revision: nextRevision, tag: String(updated?.tag) }, changed: true }
    })
    // Only once committed: a rolled-back write must not move the polls' version.
    this.#revisions?.note(service, change.current)
    return { ...change.current, version: versionOf(change.current), changed: change.changed }
  }

  /** Refuse a set that core would refuse, or that repeats an id. */
  #check(next: readonly RuleBody[]): void {
    const seen = new Map<string, number>()
    const issues: string[] = []
    next.forEach((rule, index) => {
      const first = seen.get(rule.id)
      if (first !== undefined) {
        issues.push(
          `rules[${index}].id: duplicate id ${JSON.stringify(rule.id)} (also rules[${first}])`,
        )
      } else seen.set(rule.id, index)
    })
    if (issues.length === 0) issues.push(...this.#validate(next))
    if (issues.length > 0) {
      throw new ProblemError('invalid-rules', issues.join('; '), { errors: issues })
    }
  }
}

async function write(
  tx: DbSession,
  service: string,
  current: readonly RuleBody[],
  next: readonly RuleBody[],
): Promise<void> {
  const keep = new Set(next.map((r) => r.id))
  for (const rule of current) {
    if (!keep.has(rule.id)) {
      await tx.query('DELETE FROM rules WHERE service = $1 AND id = $2', [service, rule.id])
    }
  }
  let position = 0
  for (const rule of next) {
    await tx.query(
      `INSERT INTO rules (service, id, body, position) VALUES ($1, $2, $3::jsonb, $4)
       ON CONFLICT (service, id) DO UPDATE SET body = EXCLUDED.body, position = EXCLUDED.position`,
      [service, rule.id, JSON.stringify(rule), position++],
    )
  }
}

const isTagList = (
  given: readonly string[] | WriteConditions | undefined,
): given is readonly string[] => Array.isArray(given)

function unknownRule(service: string, id: string): ProblemError {
  return new ProblemError(
    'not-found',
    `no rule ${JSON.stringify(id)} in service ${JSON.stringify(service)}`,
  )
}
