import { PGlite } from '@electric-sql/pglite'
import { checkSchemaName, type Db, type DbSession } from './db.js'

/** Options of {@link openPgliteDb}. */
export interface PgliteDbOptions {
  /**
   * Directory holding the database files; absent keeps everything in memory (tests).
   * @default undefined (in memory)
   */
  dataDir?: string | undefined
  /**
   * Schema to create and use instead of `public`.
   * @default undefined (public)
   */
  schema?: string | undefined
}

/**
 * Open an embedded PostgreSQL (PGlite): no server to install, one process, one connection.
 *
 * @param options - where the data lives
 * @returns a {@link Db} over it
 * @example
 * ```ts
 * const db = await openPgliteDb({ dataDir: './.floodgate-data' })
 * ```
 */
export async function openPgliteDb(options: PgliteDbOptions = {}): Promise<Db> {
  const pg =
    options.dataDir === undefined ? await PGlite.create() : await PGlite.create(options.dataDir)
  if (options.schema !== undefined) {
    const schema = checkSchemaName(options.schema)
    // PGlite has a single session, so setting the search path once covers every later query.
    await pg.exec(`CREATE SCHEMA IF NOT EXISTS ${schema}; SET search_path TO ${schema}`)
  }
  const session = (q: Pick<PGlite, 'query'>): DbSession => ({
    async query<Row extends object>(sql: string, params: readonly unknown[] = []) {
      const result = await q.query<Row>(sql, [...params])
      return result.rows
    },
  })
  return {
    kind: 'pglite',
    ...session(pg),
    transaction: (fn) => pg.transaction((tx) => fn(session(tx))),
    close: () => pg.close(),
  }
}
