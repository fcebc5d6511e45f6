import type { Clock } from './clock.js'
import type { KeyBuilderFailed } from './keys/build-key.js'
import type { Logger } from './logger.js'
import { describeValue } from './options/checks.js'

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

  /** @param message - the line's message, or what makes it (only for a line that is written) */
  warn(fields: Record<string, unknown>, message: string | (() => string)): void {
    const now = this.clock()
    if (now - this.lastMs >= this.intervalMs) {
      const text = typeof message === 'string' ? message : message()
      this.logger.warn({ ...fields, suppressed: this.suppressed }, text)
      this.lastMs = now
      this.suppressed = 0
    } else {
      this.suppressed++
    }
  }
}

export type FailOpenCode =
  | 'FG_WRN_STORE_FAILED_OPEN'
  | 'FG_WRN_COST_INVALID'
  | 'FG_WRN_CHECK_FAILED_OPEN'
  | 'FG_WRN_LIMITER_CLOSED'

export const FAIL_OPEN_MESSAGES: Record<FailOpenCode, string> = {
  FG_WRN_STORE_FAILED_OPEN: 'store failed; request passed unjudged (fail-open)',
  FG_WRN_COST_INVALID:
    'request cost is not a finite, non-negative number; request passed uncounted (fail-open)',
  FG_WRN_CHECK_FAILED_OPEN: 'check() failed outside the store; request passed unjudged (fail-open)',
  FG_WRN_LIMITER_CLOSED: 'limiter is closed; request passed unjudged (fail-open)',
}

/**
 * Where a limiter's compiled keys report a key builder that threw or answered something that
 * is not a key: one line per interval on a log of its own, so an outage of the store and a
 * broken builder do not hide each other.
 *
 * @param log - the builders' own throttled log
 * @returns the reporter handed to the key functions when they are compiled
 */
export function keyBuilderReporter(log: FailOpenLog): KeyBuilderFailed {
  return (builder, err, threw) =>
    log.warn(
      { code: 'FG_WRN_KEY_BUILDER_FAILED', builder: `keys.${builder}`, err },
      () =>
        `key builder keys.${builder} ${threw ? `threw: ${thrownText(err)}` : (err as Error).message}; the request had no value for its key part, so the rule's fallbackKey applied`,
    )
}

/** A thrown value as a short text, whatever was thrown (a string, an object, a Proxy). */
function thrownText(err: unknown): string {
  try {
    const text = err instanceof Error ? String(err.message) : describeValue(err)
    return text.length > 200 ? `${text.slice(0, 200)}…` : text
  } catch {
    return 'a value that cannot be read'
  }
}
