import Fastify, { type FastifyInstance, type FastifyServerOptions } from 'fastify'
import type { DestinationStream, LoggerOptions } from 'pino'
import { errorResponseServerOptions, installErrorResponses } from './error-responses.js'
import { installRequestGuards } from './request-guards.js'
import { installJsonBodies } from './json-bodies.js'
import { errSerializer, REDACTED, REDACTED_PATHS, redactingStream } from './log-redaction.js'
import type { LockOwner } from './db/data-dir-lock.js'
import { TokenRegistry, type TokenOptions } from './auth.js'
import { validateWithCore } from './core-validator.js'
import type { Db } from './db/db.js'
import { migrate } from './db/migrations.js'
import { openPgDb } from './db/pg-db.js'
import { openPgliteDb } from './db/pglite-db.js'
import { openApiDocument } from './openapi.js'
import { adminRoutes } from './routes/admin-routes.js'
import { meRoutes } from './routes/me-routes.js'
import { reportRoutes } from './routes/report-routes.js'
import { rulesRoutes } from './routes/rules-routes.js'
import { FleetReports, type FleetOptions } from './fleet-reports.js'
import { checkServiceName } from './service-name.js'
import { RulesRepository, type RulesValidator } from './rules-repository.js'

/** Options of {@link createRulesService}. */
export interface RulesServiceOptions {
  /**
   * A PostgreSQL server (`postgres://…`). When absent the service embeds PGlite.
   * @default undefined (embedded PGlite)
   */
  databaseUrl?: string | undefined
  /**
   * With `databaseUrl`: the longest wait for PostgreSQL, in ms, for a connection and for each
   * statement (a lock wait included); past it the request answers 503 instead of hanging.
   * @default 10_000
   */
  databaseTimeoutMs?: number | undefined
  /**
   * PGlite's data directory; ignored with `databaseUrl`.
   * @default undefined (in memory: rules are lost when the process exits)
   */
  dataDir?: string | undefined
  /**
   * PostgreSQL schema for the tables (created when missing).
   * @default undefined (the connection's search path, normally `public`)
   */
  schema?: string | undefined
  /**
   * An open database instead of `databaseUrl`/`dataDir`; the caller closes it.
   * @default undefined
   */
  db?: Db | undefined
  /**
   * Bearer tokens accepted. Without any, the API is read-only.
   * @default []
   */
  tokens?: readonly TokenOptions[] | undefined
  /**
   * Whether reads (the hosts' polls, the admin page's lists) need a token.
   * @default true when some token has the `read` role, else false
   */
  requireReadToken?: boolean | undefined
  /**
   * Services created (empty) at start, besides those named by tokens.
   * @default []
   */
  services?: readonly string[] | undefined
  /**
   * Largest request body in bytes; larger ones get 413.
   * @default 65536
   */
  bodyLimit?: number | undefined
  /**
   * pino options, or false for no logs. Credentials never reach a line: credential headers are
   * removed, and every line is scrubbed of `token=`/`api_key=`-like query values and `Bearer`
   * credentials, wherever they appear (URLs, error messages).
   * @default false
   */
  logger?: boolean | LoggerOptions | undefined
  /**
   * Where logs go (with `logger`); pino writes to stdout by default.
   * @default undefined
   */
  logStream?: DestinationStream | undefined
  /**
   * Serve the admin page at `/admin`.
   * @default true
   */
  admin?: boolean | undefined
  /**
   * The history of what hosts report with their polls (`POST /v1/services/:service/report`),
   * shown on the admin page; false refuses reports (404) and shows none.
   * @default {} (10 s buckets, 10 minutes, at most 1000 hosts per service)
   */
  fleet?: FleetOptions | false | undefined
  /**
   * Validates every write's resulting set.
   * @default core's `parseRules`
   */
  validate?: RulesValidator | undefined
}

/** The running service's Fastify application. */
export type RulesServiceApp = FastifyInstance

/**
 * Build the rules service: open (and migrate) the database, then register the `/v1` API,
 * `/openapi.json`, `/healthz` and the `/admin` page. Call `app.listen()` to serve, or
 * {@link startRulesService} to do both. Closing the app closes the database it opened.
 *
 * @param options - storage, tokens and limits
 * @returns the Fastify application, ready
 * @example
 * ```ts
 * const app = await createRulesService({
 *   dataDir: './.floodgate-data',
 *   tokens: [{ name: 'ops', token: process.env.FLOODGATE_ADMIN_TOKEN!, role: 'admin' }],
 * })
 * await app.listen({ port: 8080 })
 * ```
 */
export async function createRulesService(
  options: RulesServiceOptions = {},
): Promise<RulesServiceApp> {
  const tokens = new TokenRegistry(options.tokens ?? [])
  // Bad names fail at start, before any database is opened.
  const services = [
    ...(options.services ?? []).map((name, i) => checkServiceName(name, `services[${i}]`)),
    // Checked by the registry, naming the token and the entry.
    ...tokens.namedServices,
  ]
  const validate = options.validate ?? validateWithCore
  // Bad fleet options fail at start too.
  const fleet = options.fleet === false ? undefined : new FleetReports(options.fleet)
  const ownDb = options.db === undefined
  let staleLock: LockOwner | undefined
  const db =
    options.db ??
    (options.databaseUrl !== undefined
      ? await openPgDb({
          databaseUrl: options.databaseUrl,
          schema: options.schema,
          timeoutMs: options.databaseTimeoutMs,
        })
      : await openPgliteDb({
          dataDir: options.dataDir,
          schema: options.schema,
          onStaleLock: (owner) => (staleLock = owner),
        }))

  const repository = new RulesRepository(db, validate)
  let app: FastifyInstance
  try {
    await migrate(db)
    for (const name of services) {
      await repository.ensureService(name)
    }

    const logger: FastifyServerOptions['logger'] =
      options.logger === undefined || options.logger === false
        ? false
        : {
            ...(options.logger === true ? {} : options.logger),
            redact: { paths: [...REDACTED_PATHS], censor: REDACTED },
            serializers: {
              ...(options.logger === true ? {} : options.logger.serializers),
              err: errSerializer,
            },
            stream: redactingStream(options.logStream),
          }
    app = Fastify({
      logger,
      bodyLimit: options.bodyLimit ?? 65_536,
      // Reject `__proto__`/`constructor` keys in JSON rather than silently strip them.
      onProtoPoisoning: 'error',
      onConstructorPoisoning: 'error',
      ...errorResponseServerOptions,
    })
  } catch (err) {
    if (ownDb) await db.close()
    throw err
  }

  if (ownDb) app.addHook('onClose', () => db.close())

  // The API speaks JSON only: a text/plain body gets 415, not a confusing 400.
  installJsonBodies(app)

  installErrorResponses(app)
  installRequestGuards(app)

  const requireReadToken = options.requireReadToken ?? tokens.hasReadTokens
  rulesRoutes(app, { repository, tokens, validate, requireReadToken })
  meRoutes(app, tokens)
  if (fleet !== undefined) reportRoutes(app, { repository, tokens, requireReadToken, fleet })

  const openapi = openApiDocument()
  app.get('/openapi.json', () => openapi)
  app.get('/healthz', async () => {
    await db.query('SELECT 1')
    return { status: 'ok', storage: db.kind }
  })
  if (options.admin !== false) adminRoutes(app)

  if (!(options.tokens ?? []).some((t) => t.role !== 'read')) {
    app.log.warn(
      'no admin or write token configured: the API is read-only (set FLOODGATE_ADMIN_TOKEN, or tokens in --tokens-file; floodgate-rules --help lists them)',
    )
  }
  if (
    options.db === undefined &&
    options.databaseUrl === undefined &&
    options.dataDir === undefined
  ) {
    app.log.warn('no dataDir or databaseUrl: rules live in memory and are lost on exit')
  }
  if (staleLock !== undefined) {
    app.log.warn(
      { code: 'FG_ERR_DATA_DIR_LOCKED', previousHolder: staleLock },
      `replaced the lock of process ${staleLock.pid} on the data directory: that process is gone (it crashed or was killed)`,
    )
  }
  await app.ready()
  return app
}

/** Options of {@link startRulesService}: the service's plus where to listen. */
export interface StartRulesServiceOptions extends RulesServiceOptions {
  /**
   * TCP port; 0 picks a free one.
   * @default 8080
   */
  port?: number | undefined
  /**
   * Interface to bind.
   * @default '127.0.0.1'
   */
  host?: string | undefined
}

/** A listening rules service. */
export interface RunningRulesService {
  app: RulesServiceApp
  /** Base URL, e.g. `http://127.0.0.1:8080`. */
  url: string
  /** Stop listening, finish in-flight requests, close the database. */
  stop(): Promise<void>
}

/**
 * Create the service and listen.
 *
 * @param options - service options plus `port` and `host`
 * @returns the app, its URL and `stop()`
 * @example
 * ```ts
 * const service = await startRulesService({ port: 0, tokens })
 * console.log(service.url)
 * await service.stop()
 * ```
 */
export async function startRulesService(
  options: StartRulesServiceOptions = {},
): Promise<RunningRulesService> {
  const app = await createRulesService(options)
  const host = options.host ?? '127.0.0.1'
  try {
    await app.listen({ port: options.port ?? 8080, host })
  } catch (err) {
    await app.close()
    throw err
  }
  const address = app.server.address()
  const port =
    typeof address === 'object' && address !== null ? address.port : (options.port ?? 8080)
  const shownHost = host.includes(':') ? `[${host}]` : host === '0.0.0.0' ? '127.0.0.1' : host
  return { app, url: `http://${shownHost}:${port}`, stop: () => app.close() }
}
