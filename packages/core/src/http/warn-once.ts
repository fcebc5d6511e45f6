import type { ErrorCode } from '../errors.js'
import type { Logger } from '../logger.js'

/** Logs a warning the first time a code is seen, then stays quiet about that code. */
export type WarnOnce = (code: ErrorCode, message: string, fields?: Record<string, unknown>) => void

/**
 * A warner that reports each warning (code and message) once per mount: misconfiguration
 * noticed on the request path is logged once and never thrown (a throw there would turn a typo
 * into an outage). Two unknown options are two warnings; the same one on every request is one.
 *
 * @param logger - where warnings go
 * @returns the warner
 */
export function warnOnce(logger: Logger): WarnOnce {
  const seen = new Set<string>()
  return (code, message, fields) => {
    const id = `${code}\u0000${message}`
    if (seen.has(id)) return
    seen.add(id)
    logger.warn({ code, ...fields }, message)
  }
}

/** A warner that says nothing (`warnings: false`). */
export const silentWarn: WarnOnce = () => {}
