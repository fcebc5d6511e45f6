import type { ErrorCode } from '../errors.js'
import type { Logger } from '../logger.js'

/** Logs a warning the first time a code is seen, then stays quiet about that code. */
export type WarnOnce = (code: ErrorCode, message: string, fields?: Record<string, unknown>) => void

/**
 * A warner that reports each code once per mount: misconfiguration noticed on the request
 * path is logged once and never thrown (a throw there would turn a typo into an outage).
 *
 * @param logger - where warnings go
 * @returns the warner
 */
export function warnOnce(logger: Logger): WarnOnce {
  const seen = new Set<ErrorCode>()
  return (code, message, fields) => {
    if (seen.has(code)) return
    seen.add(code)
    logger.warn({ code, ...fields }, message)
  }
}
