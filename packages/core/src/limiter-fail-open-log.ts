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

export type FailOpenCode =
  'FG_WRN_STORE_FAILED_OPEN' | 'FG_WRN_COST_INVALID' | 'FG_WRN_CHECK_FAILED_OPEN'

export const FAIL_OPEN_MESSAGES: Record<FailOpenCode, string> = {
  FG_WRN_STORE_FAILED_OPEN: 'store failed; request passed unjudged (fail-open)',
  FG_WRN_COST_INVALID:
    'request cost is not a finite, non-negative number; request passed uncounted (fail-open)',
  FG_WRN_CHECK_FAILED_OPEN: 'check() failed outside the store; request passed unjudged (fail-open)',
}
