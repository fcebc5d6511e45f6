import type { Logger } from '../../logger.js'
import { misuseError } from '../../options/checks.js'
import type { Rule } from '../rule.js'
import type { ReportingLimiter } from './host-report.js'

/**
 * Where a limiter's rules come from: code, a file, or the rules service. A source delivers
 * whole validated rule sets; a set that fails validation is reported through `onError` and
 * never delivered, so the rules in force stay until a good set arrives.
 */
export interface RulesSource {
  /**
   * Starts delivering rules.
   *
   * @param onRules - Called with each new validated rule set (never with an invalid one), and
   * its revision when the source knows one.
   * @param onError - Called when a load fails (unreadable, unreachable, invalid); the source
   * keeps going and the rules in force stay. Called once per distinct failure, not per poll.
   * @param limiter - The limiter's counters and top clients, for a source that reports them
   * back to where the rules come from (`httpRules` with `report`); others ignore it.
   * @param onRecovered - Called once when a load succeeds after a failure (whether or not it
   * brought new rules), so the failure's log line gets its end.
   * @returns A promise that resolves once the first load attempt is over, whether it
   * succeeded or not: a limiter keeps running with whatever rules it has.
   */
  start(
    onRules: (rules: Rule[], revision?: string) => void,
    onError: (err: Error) => void,
    limiter?: ReportingLimiter,
    onRecovered?: () => void,
  ): Promise<void>
  /** Stops watching or polling; no callback runs afterwards. Idempotent. */
  stop(): void
}

/**
 * The runs of a source that can be stopped and started again (an app rebuilt in the same
 * process): `start()` begins a run and `stop()` ends it. Work begun in one run (a load, a poll,
 * a timer) holds its run's number and delivers, reports and schedules nothing once that run is over.
 */
export class SourceRuns {
  private running = false
  private run = 0

  /** Begins a run; returns its number. Throws when a run is already going. */
  begin(source: string): number {
    if (this.running) throw misuseError(`${source}: start() called twice`)
    this.running = true
    return ++this.run
  }

  /** Ends the run going, if any: its work stops counting. */
  end(): void {
    this.running = false
    this.run++
  }

  /** The number work begun now belongs to. */
  get current(): number {
    return this.run
  }

  /** True while run `mine` is the one going. */
  isCurrent(mine: number): boolean {
    return this.running && this.run === mine
  }

  /** True while a run is going. */
  get going(): boolean {
    return this.running
  }
}

/**
 * Remembers the last failure so that a source down for an hour reports once, not every poll,
 * and once more when it recovers. It logs to the source's own logger (silent unless given) and
 * calls `onRecovered` (the limiter's, which logs through the app's logger).
 */
export class FailureLog {
  private last: string | undefined
  /** Called on each recovery; set by the source's `start`. */
  onRecovered: () => void = () => {}

  constructor(
    private readonly logger: Logger,
    private readonly what: string,
  ) {}

  /** Forgets the last failure: a new run reports its first one, whatever an earlier run saw. */
  reset(): void {
    this.last = undefined
  }

  /** Records a failure; returns true when it differs from the previous one (report it). */
  fail(err: Error): boolean {
    if (err.message === this.last) return false
    this.last = err.message
    this.logger.warn({ err, source: this.what }, 'rules source failed; keeping the rules in force')
    return true
  }

  /** Records a success; logs a recovery when the previous attempt had failed. */
  ok(): void {
    if (this.last === undefined) return
    this.last = undefined
    this.logger.info({ source: this.what }, 'rules source recovered')
    this.onRecovered()
  }
}
