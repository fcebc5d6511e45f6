import pg from 'pg'
import { checkSchemaName, type Db, type DbSession } from './db.js'

/** Options of {@link openPgDb}. */
export interface PgDbOptions {
  /** A `postgres://` URL. */
  databaseUrl: string
  /**
   * Schema to create and use instead of `public` (tests use one per run).
   * @default undefined (public)
   */
  schema?: string | undefined
  /**
   * Most connections the pool opens.
   * @default 10
   */
  maxConnections?: number | undefined
  /**
   * Longest wait for the database, in ms: for a connection (connecting, or a free one from the
   * pool), and for each statement (the server cancels it, a lock wait included; a server that
   * stops answering altogether is given one second more before the query fails here). A
   * database that hangs then answers 503 instead of holding requests open without end.
   * @default 10_000
   */
  timeoutMs?: number | undefined
}

/** Default of {@link PgDbOptions.timeoutMs}. */
export const DEFAULT_DB_TIMEOUT_MS = 10_000
/** Largest {@link PgDbOptions.timeoutMs}: the query's own deadline (one second more) is a timer. */
export const MAX_DB_TIMEOUT_MS: number = 2 ** 31 - 1001

/**
 * Connect to a PostgreSQL server through a `pg` pool.
 *
 * @param options - the URL and pool settings
 * @returns a {@link Db} over the pool
 * @example
 * ```ts
 * const db = await openPgDb({ databaseUrl: process.env.DATABASE_URL! })
 * ```
 */
export async function openPgDb(options: PgDbOptions): Promise<Db> {
  const schema = options.schema === undefined ? undefined : checkSchemaName(options.schema)
  const timeoutMs = checkTimeoutMs(options.timeoutMs)
  const pool = new pg.Pool({
    connectionString: options.databaseUrl,
    max: options.maxConnections ?? 10,
    connectionTimeoutMillis: timeoutMs,
    statement_timeout: timeoutMs,
    query_timeout: timeoutMs + 1000,
    // Every connection starts in the schema, so no query has to name it.
    ...(schema === undefined ? {} : { options: `-c search_path=${schema}` }),
  })
  // An idle client losing its server must not crash the process; the next query reports it.
  pool.on('error', () => {})
  try {
    if (schema !== undefined) await pool.query(`CREATE SCHEMA IF NOT EXISTS ${schema}`)
    else await pool.query('SELECT 1')
  } catch (err) {
    await pool.end()
    throw err
  }
  const session = (client: pg.Pool | pg.PoolClient): DbSession => ({
    async query<Row extends object>(sql: string, params: readonly unknown[] = []) {
      const result = await client.query<Row & pg.QueryResultRow>(sql, [...params])
      return result.rows
    },
  })
  return {
    kind: 'postgres',
    ...session(pool),
    async transaction(fn) {
      const client = await pool.connect()
      // The pool listens for errors of idle clients only. A connection lost while checked out
      // (a server restart, a failover, pg_terminate_backend) emits 'error' on the client, and
      // an 'error' event nobody listens to ends the process. The query in flight fails with
      // it anyway; the client is handed back as broken, so the pool replaces it.
      let lost: Error | undefined
      const onError = (err: Error): void => {
        lost = err
      }
      client.on('error', onError)
      try {
        await client.query('BEGIN')
        const value = await fn(session(client))
        await client.query('COMMIT')
        return value
      } catch (err) {
        if (lost === undefined) await client.query('ROLLBACK').catch(() => {})
        throw err
      } finally {
        client.removeListener('error', onError)
        client.release(lost)
      }
    },
    close: () => pool.end(),
  }
}

function checkTimeoutMs(v: unknown): number {
  if (v === undefined) return DEFAULT_DB_TIMEOUT_MS
  if (typeof v !== 'number' || !Number.isInteger(v) || v < 1 || v > MAX_DB_TIMEOUT_MS) {
    throw new TypeError(
      `databaseTimeoutMs: expected a whole number of milliseconds from 1 to ${MAX_DB_TIMEOUT_MS}, got ${JSON.stringify(v) ?? typeof v}`,
    )
  }
  return v
}
