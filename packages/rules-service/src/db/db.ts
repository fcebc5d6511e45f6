/**
 * The one storage interface the rules service talks to. Both backends (embedded PGlite and a
 * PostgreSQL server through `pg`) implement it, and both run the same SQL.
 */
export interface DbSession {
  /**
   * Run one parameterised statement (`$1`, `$2`…) and return its rows.
   *
   * @param sql - one SQL statement
   * @param params - values for the placeholders
   * @returns the rows, as the driver decodes them (jsonb → objects, timestamptz → Date)
   */
  query<Row extends object>(sql: string, params?: readonly unknown[]): Promise<Row[]>
}

/** A database: sessions plus transactions and a way to close it. */
export interface Db extends DbSession {
  /** Which backend this is, for logs and the health endpoint. */
  readonly kind: 'pglite' | 'postgres'
  /**
   * Run `fn` inside one transaction: committed when it resolves, rolled back when it throws.
   *
   * @param fn - the work; it must use the session it is given, never the outer `Db`
   * @returns what `fn` returned
   */
  transaction<T>(fn: (tx: DbSession) => Promise<T>): Promise<T>
  /** Release the database (close the pool or the embedded instance). */
  close(): Promise<void>
}

const SCHEMA_NAME = /^[a-z_][a-z0-9_]{0,62}$/

/**
 * Check a schema name before it is spliced into SQL (identifiers cannot be parameters).
 *
 * @param schema - the name to check
 * @returns the same name
 */
export function checkSchemaName(schema: string): string {
  if (!SCHEMA_NAME.test(schema)) {
    throw new TypeError(
      `schema: expected lower-case letters, digits and _ (at most 63), got ${JSON.stringify(schema)}`,
    )
  }
  return schema
}
