import { PGlite } from '@electric-sql/pglite'
import { lockDataDir, type LockOwner } from './data-dir-lock.js'
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
  /**
   * Called when the data directory's lock was left by a process that is gone (it crashed or
   * was killed) and this one replaced it.
   * @default undefined
   */
  onStaleLock?: ((owner: LockOwner) => void) | undefined
}

/**
 * Open an embedded PostgreSQL (PGlite): no server to install, one process, one connection.
 * A data directory is locked while it is open (`floodgate.lock` inside it): a second process,
 * or a second open in this one, gets `FG_ERR_DATA_DIR_LOCKED` instead of a diverging copy.
 *
 * @param options - where the data lives
 * @returns a {@link Db} over it
 * @example
 * ```ts
 * const db = await openPgliteDb({ dataDir: './.floodgate-data' })
 * ```
 */
export async function openPgliteDb(options: PgliteDbOptions = {}): Promise<Db> {
  const schema = options.schema === undefined ? undefined : checkSchemaName(options.schema)
  const lock = options.dataDir === undefined ? undefined : lockDataDir(options.dataDir)
  if (lock?.replacedStale !== undefined) options.onStaleLock?.(lock.replacedStale)
  let pg: PGlite
  try {
    pg =
      options.dataDir === undefined ? await PGlite.create() : await PGlite.create(options.dataDir)
    if (schema !== undefined) {
      // PGlite has a single session, so setting the search path once covers every later query.
      await pg.exec(`CREATE SCHEMA IF NOT EXISTS ${schema}; SET search_path TO ${schema}`)
    }
  } catch (err) {
    lock?.release()
    throw err
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
    async close() {
      try {
        await pg.close()
      } finally {
        lock?.release()
      }
    },
  }
}
