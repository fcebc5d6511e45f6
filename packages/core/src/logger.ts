/** The pino subset Floodgate logs through: objects first, then a message. */
export interface Logger {
  debug(obj: object, msg?: string): void
  info(obj: object, msg?: string): void
  warn(obj: object, msg?: string): void
  error(obj: object, msg?: string): void
  child?(bindings: Record<string, unknown>): Logger
}

const noop = (): void => {}

/** A logger that discards everything (the default when none is given). */
export const silentLogger: Logger = { debug: noop, info: noop, warn: noop, error: noop }

/** Scope a logger to Floodgate, with pino's `child` when the logger has it. */
export function scopeLogger(logger: Logger | undefined, component = 'floodgate'): Logger {
  if (!logger) return silentLogger
  return logger.child ? logger.child({ component }) : logger
}

/**
 * Where misconfiguration warnings go when the app gave no logger (and the framework has none):
 * one line on stderr each, `floodgate: <message> (<code>)`, as express-rate-limit's validations
 * print theirs. Only `warn` writes; the other levels stay silent.
 */
export const stderrWarnings: Logger = {
  debug: noop,
  info: noop,
  warn: (obj, msg) => {
    const code = (obj as { code?: unknown }).code
    process.stderr.write(`floodgate: ${msg ?? ''}${typeof code === 'string' ? ` (${code})` : ''}\n`)
  },
  error: noop,
}
