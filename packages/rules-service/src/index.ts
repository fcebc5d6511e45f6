/**
 * @module @floodgate/rules-service
 * The Floodgate rules service: service owners manage rate-limiting rules over HTTP (and an
 * admin page); every host polls `GET /v1/services/:service/ruleset` with core's `httpRules`
 * source. Rules live in PostgreSQL: embedded PGlite by default, a server via `databaseUrl`.
 */
export type {
  RulesServiceApp,
  RulesServiceOptions,
  RunningRulesService,
  StartRulesServiceOptions,
} from './rules-service.js'
export { createRulesService, startRulesService } from './rules-service.js'
export type { Principal, TokenOptions, TokenRole } from './auth.js'
export { TokenRegistry } from './auth.js'
export type { Db, DbSession } from './db/db.js'
export type { PgliteDbOptions } from './db/pglite-db.js'
export type { LockOwner } from './db/data-dir-lock.js'
export { openPgliteDb } from './db/pglite-db.js'
export type { PgDbOptions } from './db/pg-db.js'
export { openPgDb } from './db/pg-db.js'
export type { Migration } from './db/migrations.js'
export { migrate, migrations } from './db/migrations.js'
export type {
  AuditAction,
  AuditEntry,
  Change,
  RuleBody,
  Ruleset,
  RulesValidator,
  ServiceSummary,
} from './rules-repository.js'
export { RulesRepository } from './rules-repository.js'
export { mergePatch } from './rule-bodies.js'
export type { WriteConditions } from './etag.js'
export type { ProblemBody, ProblemType } from './problem.js'
export { ProblemError } from './problem.js'
export { validateWithCore } from './core-validator.js'
export { openApiDocument } from './openapi.js'
export type { FleetOptions, FleetRuleView, FleetView } from './fleet-reports.js'
export type { HostReport, ReportCount, ReportCounts, RuleReport } from './fleet-report-body.js'
