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

/**
 * Scope a logger to Floodgate, with pino's `child` when the logger has it. The scoped logger
 * never throws: Floodgate logs on its failure paths (a store down, a sync failed), and a
 * logger that threw there would turn a fail-open into an error for the request, or stop a
 * background loop. A line the logger cannot take is lost.
 */
export function scopeLogger(logger: Logger | undefined, component: string = 'floodgate'): Logger {
  if (!logger) return silentLogger
  let scoped = logger
  if (logger.child) {
    try {
      scoped = logger.child({ component })
    } catch {
      // Unscoped, then.
    }
  }
  return {
    debug: (obj, msg) => write(scoped, 'debug', obj, msg),
    info: (obj, msg) => write(scoped, 'info', obj, msg),
    warn: (obj, msg) => write(scoped, 'warn', obj, msg),
    error: (obj, msg) => write(scoped, 'error', obj, msg),
  }
}

function write(
  logger: Logger,
  level: 'debug' | 'info' | 'warn' | 'error',
  obj: object,
  msg: string | undefined,
): void {
  try {
    // Called on the logger (pino needs its `this`), with a message only when there is one.
    if (msg === undefined) logger[level](obj)
    else logger[level](obj, msg)
  } catch {
    // The line is lost; the caller goes on.
  }
}

// Characters that would end a stderr line early or hide what follows: control characters
// (C0, DEL, C1) and the line and paragraph separators.
const UNPRINTABLE = /[\p{Cc}\u2028\u2029]/gu

/**
 * A text as one printable line: each control character, U+2028 and U+2029 written `\uXXXX`.
 * An error message can carry what a client sent (a key builder or `skip` that echoes a header
 * in what it throws); raw, a newline in it would forge a log line of the client's choosing.
 *
 * @param text - any text
 * @returns the text without line breaks or other control characters
 */
export function oneLine(text: string): string {
  return text.replace(UNPRINTABLE, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`)
}

/** One line for stderr: `floodgate: <message>: <error message> (<code>)`. */
function stderrLine(obj: object, msg: string | undefined): void {
  const { code, err } = obj as { code?: unknown; err?: unknown }
  const cause = err instanceof Error ? String(err.message) : undefined
  // A FloodgateError's message already ends with its code.
  const tail = typeof code === 'string' && !cause?.includes(code) ? ` (${code})` : ''
  process.stderr.write(`floodgate: ${oneLine(`${msg ?? ''}${cause ? `: ${cause}` : ''}${tail}`)}\n`)
}

/**
 * Where misconfiguration warnings go when the app gave no logger (and the framework has none):
 * one line on stderr each, `floodgate: <message> (<code>)`, as express-rate-limit's validations
 * print theirs. Only `warn` writes; the other levels stay silent.
 */
export const stderrWarnings: Logger = { ...silentLogger, warn: stderrLine }

/**
 * Where a limiter reports its rules source when the app gave no logger (and the framework has
 * none): a failed load (warn), a recovery (info), a refused rule set (error) and each new set
 * (info), one stderr line each. These are rare (a source reports each distinct failure once),
 * and a host that silently refuses the rules it was sent enforces nothing its owner expects.
 */
export const stderrLogger: Logger = {
  debug: noop,
  info: stderrLine,
  warn: stderrLine,
  error: stderrLine,
}
