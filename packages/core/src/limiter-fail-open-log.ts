import type { Clock } from './clock.js'
import type { Logger } from './logger.js'

/**
 * At most one fail-open warning per interval; the line counts the ones it stands for, so an
 * outage does not flood the log.
 */
export class FailOpenLog {
  private lastMs = -Infinity
  private suppressed = 0

  constructor(
    private readonly logger: Logger,
    private readonly clock: Clock,
    private readonly intervalMs: number,
  ) {}

  warn(fields: Record<string, unknown>, message: string): void {
    const now = this.clock()
    if (now - this.lastMs >= this.intervalMs) {
      this.logger.warn({ ...fields, suppressed: this.suppressed }, message)
      this.lastMs = now
      this.suppressed = 0
    } else {
      this.suppressed++
    }
  }
}
