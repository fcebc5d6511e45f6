import pg from 'pg'
import { checkSchemaName, type Db, type DbSession } from './db.js'
import { CommitOutcomeUnknown, isDatabaseOutage } from './db-unavailable.js'

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
      let xid: string | undefined
      try {
        await client.query('BEGIN')
        // The transaction's id, to ask another connection whether it committed if this one is
        // lost at COMMIT (see below).
        const [row] = (await client.query<{ xid: string }>('SELECT txid_current()::text AS xid'))
          .rows
        xid = row?.xid
        const value = await fn(session(client))
        try {
          await client.query('COMMIT')
        } catch (err) {
          // A connection lost at COMMIT leaves the outcome open: the server may have committed
          // and the answer been lost on the way. Answering "nothing stored" then would show the
          // client a refused write that every later read holds, so ask the server instead.
          if (xid === undefined || (lost === undefined && !isDatabaseOutage(err))) throw err
          if ((await commitOutcome(pool, xid, timeoutMs)) === 'committed') return value
          throw err
        }
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

/**
 * Whether the transaction `xid` committed, asked on another connection once the one that sent
 * its COMMIT was lost. A transaction still running (the server has not yet seen its client go)
 * is asked about again until `timeoutMs` has passed.
 *
 * @param pool - the pool, for a fresh connection
 * @param xid - the transaction's id (`txid_current()`)
 * @param timeoutMs - how long to keep asking
 * @returns 'committed' or 'aborted'; throws {@link CommitOutcomeUnknown} when the server cannot
 * say (unreachable, or the transaction still running at the deadline)
 */
async function commitOutcome(
  pool: pg.Pool,
  xid: string,
  timeoutMs: number,
): Promise<'committed' | 'aborted'> {
  const deadline = Date.now() + timeoutMs
  for (let wait = 10; ; wait = Math.min(wait * 2, 250)) {
    let status: string | null | undefined
    try {
      const { rows } = await pool.query<{ status: string | null }>(
        'SELECT txid_status($1::bigint) AS status',
        [xid],
      )
      status = rows[0]?.status
    } catch (err) {
      throw new CommitOutcomeUnknown(err)
    }
    if (status === 'committed' || status === 'aborted') return status
    // 'in progress' (or null: too old to know, which cannot happen this soon).
    if (status !== 'in progress' || Date.now() + wait > deadline)
      throw new CommitOutcomeUnknown(undefined)
    await new Promise((resolve) => setTimeout(resolve, wait))
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
