import type { Db } from './db.js'

/** One schema change, applied once and recorded in `floodgate_migrations`. */
export interface Migration {
  readonly id: number
  readonly name: string
  readonly sql: readonly string[]
}

/**
 * Every schema change, oldest first. Append only: an applied migration is never edited, and
 * PGlite and PostgreSQL run exactly the same statements.
 */
export const migrations: readonly Migration[] = [
  {
    id: 1,
    name: 'services, rules, audit',
    sql: [
      `CREATE TABLE services (
        name text PRIMARY KEY,
        revision bigint NOT NULL DEFAULT 0,
        created_at timestamptz NOT NULL DEFAULT now(),
        updated_at timestamptz NOT NULL DEFAULT now()
      )`,
      `CREATE TABLE rules (
        service text NOT NULL REFERENCES services (name) ON DELETE CASCADE,
        id text NOT NULL,
        body jsonb NOT NULL,
        position integer NOT NULL,
        PRIMARY KEY (service, id)
      )`,
      `CREATE INDEX rules_service_position ON rules (service, position)`,
      `CREATE TABLE audit (
        id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        service text NOT NULL REFERENCES services (name) ON DELETE CASCADE,
        rule_id text,
        actor text NOT NULL,
        action text NOT NULL,
        revision bigint NOT NULL,
        before jsonb,
        after jsonb,
        at timestamptz NOT NULL DEFAULT now()
      )`,
      `CREATE INDEX audit_service_id ON audit (service, id DESC)`,
    ],
  },
  {
    id: 2,
    name: 'services.tag: a random tag per revision, for ETags',
    // Revisions start over when the data is lost; the tag, drawn anew by every write (`SET tag
    // = DEFAULT`) and every new row, tells revision 1 of a new set from revision 1 of a lost one.
    sql: [
      `ALTER TABLE services ADD COLUMN tag text NOT NULL
        DEFAULT replace(gen_random_uuid()::text, '-', '')`,
    ],
  },
]

// Any constant works; it only has to be the same in every instance of the service.
const MIGRATION_LOCK = 0x466c6f6f

/**
 * Bring the schema up to date. Safe when several instances start at once: they take an
 * advisory lock, so one applies and the others find the work done.
 *
 * @param db - the database
 * @param list - the migrations to apply
 * @returns the ids applied by this call
 */
export async function migrate(db: Db, list: readonly Migration[] = migrations): Promise<number[]> {
  return db.transaction(async (tx) => {
    await tx.query('SELECT pg_advisory_xact_lock($1)', [MIGRATION_LOCK])
    await tx.query(`CREATE TABLE IF NOT EXISTS floodgate_migrations (
      id integer PRIMARY KEY,
      name text NOT NULL,
      applied_at timestamptz NOT NULL DEFAULT now()
    )`)
    const done = new Set(
      (await tx.query<{ id: number }>('SELECT id FROM floodgate_migrations')).map((r) =>
        Number(r.id),
      ),
    )
    const applied: number[] = []
    for (const migration of list) {
      if (done.has(migration.id)) continue
      for (const statement of migration.sql) await tx.query(statement)
      await tx.query('INSERT INTO floodgate_migrations (id, name) VALUES ($1, $2)', [
        migration.id,
        migration.name,
      ])
      applied.push(migration.id)
    }
    return applied
  })
}
