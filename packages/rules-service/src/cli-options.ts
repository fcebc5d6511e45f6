import { readFileSync } from 'node:fs'
import { parseArgs } from 'node:util'
import { decodeText, duplicateJsonKey } from '@floodgate/core/rules'
import type { TokenOptions } from './auth.js'
import { MAX_DB_TIMEOUT_MS } from './db/pg-db.js'
import type { StartRulesServiceOptions } from './rules-service.js'

/** `floodgate-rules --help`. */
export const USAGE = `Usage: floodgate-rules serve [options]

Serve the Floodgate rules API (/v1), its OpenAPI description (/openapi.json) and the
admin page (/admin).

Storage (PostgreSQL):
  --data-dir <dir>        embedded PGlite data directory   [FLOODGATE_DATA_DIR, default ./.floodgate-data]
  --database-url <url>    a PostgreSQL server instead       [DATABASE_URL]
  --schema <name>         schema for the tables             [FLOODGATE_SCHEMA, default public]

Listening:
  --port <n>              [PORT, default 8080]
  --host <addr>           [HOST, default 127.0.0.1; 0.0.0.0 for every interface]

Tokens (never pass secrets as flags: they show in ps):
  FLOODGATE_ADMIN_TOKEN   an admin token (name "admin")
  FLOODGATE_READ_TOKEN    a read token for hosts (name "reader"); reads then need a token
  --tokens-file <file>    JSON list of { name, role: admin|write|read, services?, token | tokenEnv }
                          [FLOODGATE_TOKENS_FILE]
  --require-read-token    reads need a token even without read tokens

Other:
  --service <name>        create this service at start (repeatable)
  --body-limit <bytes>    largest request body [default 65536]
  --database-timeout <ms> longest wait for PostgreSQL, per connection and statement
                          [FLOODGATE_DATABASE_TIMEOUT_MS, default 10000]
  --log-level <level>     pino level [LOG_LEVEL, default info]
  -h, --help
`

/** Parsed command line. */
export interface CliCommand {
  command: 'serve' | 'help'
  options: StartRulesServiceOptions
}

/**
 * A number from the command line or the environment: decimal digits within `min`-`max`.
 * Number() alone would read '' as 0 (an empty `PORT=` listened on a random port) and ' 80',
 * '0x1F90' or '1e3' as numbers nobody wrote.
 */
const intOption = (
  name: string,
  value: string | undefined,
  min: number,
  max: number,
): number | undefined => {
  if (value === undefined) return undefined
  const n = /^\d{1,16}$/.test(value) ? Number(value) : NaN
  if (!(n >= min && n <= max))
    throw new TypeError(
      `${name}: expected a whole number from ${min} to ${max}, got ${JSON.stringify(value)}`,
    )
  return n
}

/**
 * Read the tokens file: a JSON list (or `{ "tokens": [...] }`) whose entries hold the secret
 * in `token`, or name an environment variable holding it in `tokenEnv`.
 */
function readTokensFile(path: string, env: NodeJS.ProcessEnv): TokenOptions[] {
  let data: unknown
  try {
    // UTF-8 or UTF-16, a byte order mark (as Windows editors write one) left out.
    const text = decodeText(readFileSync(path))
    data = JSON.parse(text)
    // Access control read otherwise than written is worse than no start: `"role"` twice.
    const duplicate = duplicateJsonKey(text)
    if (duplicate !== undefined) {
      throw new Error(`it gives a key twice in one object, at ${duplicate}; give each key once`)
    }
  } catch (err) {
    throw new TypeError(`--tokens-file ${path}: ${(err as Error).message}`)
  }
  const list = Array.isArray(data) ? data : (data as { tokens?: unknown } | null)?.tokens
  if (!Array.isArray(list))
    throw new TypeError(`--tokens-file ${path}: expected a JSON list of tokens`)
  return list.map((entry: unknown, i) => {
    if (entry === null || typeof entry !== 'object' || Array.isArray(entry)) {
      throw new TypeError(
        `--tokens-file ${path}: tokens[${i}]: expected an object { name, role, services?, token | tokenEnv }, got ${JSON.stringify(entry)}`,
      )
    }
    // A misspelt field is not ignored: `"service"` for `"services"` left a token unscoped.
    const unknown = Object.keys(entry).find((k) => !TOKEN_FIELDS.includes(k))
    if (unknown !== undefined) {
      throw new TypeError(
        `--tokens-file ${path}: tokens[${i}]: unknown field ${JSON.stringify(unknown)} (expected ${TOKEN_FIELDS.join(', ')})`,
      )
    }
    const t = entry as Partial<TokenOptions> & { tokenEnv?: string }
    const token = t.tokenEnv !== undefined ? env[t.tokenEnv] : t.token
    if (token === undefined) {
      throw new TypeError(
        `--tokens-file ${path}: tokens[${i}] needs "token" or "tokenEnv"${t.tokenEnv ? ` (${t.tokenEnv} is not set)` : ''}`,
      )
    }
    return { name: t.name ?? '', role: t.role ?? 'read', services: t.services, token }
  })
}

/** The fields of a tokens file's entry. */
const TOKEN_FIELDS: readonly string[] = ['name', 'role', 'services', 'token', 'tokenEnv']

/**
 * Turn argv and the environment into service options.
 *
 * @param argv - arguments after the program name
 * @param env - the environment
 * @returns the command and its options
 */
export function parseCli(argv: readonly string[], env: NodeJS.ProcessEnv): CliCommand {
  const { values, positionals } = parseArgs({
    args: [...argv],
    allowPositionals: true,
    options: {
      'data-dir': { type: 'string' },
      'database-url': { type: 'string' },
      schema: { type: 'string' },
      port: { type: 'string' },
      host: { type: 'string' },
      'tokens-file': { type: 'string' },
      'require-read-token': { type: 'boolean' },
      service: { type: 'string', multiple: true },
      'body-limit': { type: 'string' },
      'database-timeout': { type: 'string' },
      'log-level': { type: 'string' },
      help: { type: 'boolean', short: 'h' },
    },
  })
  const command = positionals[0] ?? 'help'
  if (values.help || command === 'help') return { command: 'help', options: {} }
  if (command !== 'serve' || positionals.length > 1) {
    throw new TypeError(
      `unknown command ${JSON.stringify(positionals.join(' '))}; try: floodgate-rules serve`,
    )
  }
  const tokens: TokenOptions[] = []
  if (env.FLOODGATE_ADMIN_TOKEN)
    tokens.push({ name: 'admin', role: 'admin', token: env.FLOODGATE_ADMIN_TOKEN })
  if (env.FLOODGATE_READ_TOKEN)
    tokens.push({ name: 'reader', role: 'read', token: env.FLOODGATE_READ_TOKEN })
  const tokensFile = values['tokens-file'] ?? env.FLOODGATE_TOKENS_FILE
  if (tokensFile) tokens.push(...readTokensFile(tokensFile, env))
  const databaseUrl = values['database-url'] ?? env.DATABASE_URL
  return {
    command: 'serve',
    options: {
      ...(databaseUrl
        ? {
            databaseUrl,
            databaseTimeoutMs: intOption(
              '--database-timeout',
              values['database-timeout'] ?? env.FLOODGATE_DATABASE_TIMEOUT_MS,
              1,
              MAX_DB_TIMEOUT_MS,
            ),
          }
        : { dataDir: values['data-dir'] ?? env.FLOODGATE_DATA_DIR ?? '.floodgate-data' }),
      schema: values.schema ?? env.FLOODGATE_SCHEMA,
      port: intOption('--port', values.port ?? env.PORT, 0, 65_535) ?? 8080,
      host: values.host ?? env.HOST ?? '127.0.0.1',
      tokens,
      ...(values['require-read-token'] ? { requireReadToken: true } : {}),
      services: values.service ?? [],
      bodyLimit: intOption('--body-limit', values['body-limit'], 1, 2 ** 31 - 1),
      logger: { level: values['log-level'] ?? env.LOG_LEVEL ?? 'info' },
    },
  }
}
