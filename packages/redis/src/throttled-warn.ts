import type { Logger } from '@floodgate/core'

/** How often, at most, a store warns about Redis trouble: an outage must not flood the log. */
const WARN_INTERVAL_MS = 10_000

/**
 * A warner that writes at most one line per 10 s and drops the rest: every call of a store can
 * fail while Redis is down, and each failure is already a fail-open or a local decision.
 *
 * @param logger - where the warnings go
 * @returns `warn(fields, message)`
 */
export function throttledWarn(
  logger: Logger,
): (fields: Record<string, unknown>, message: string) => void {
  let lastMs = -Infinity
  return (fields, message) => {
    const t = Date.now()
    if (t - lastMs < WARN_INTERVAL_MS) return
    lastMs = t
    logger.warn(fields, message)
  }
}
