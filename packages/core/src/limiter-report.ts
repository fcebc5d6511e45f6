import type { Decision } from './decision.js'
import { zeroCounts, type DecisionCounts } from './limiter-counters.js'
import type { LimiterObserver } from './limiter-observer.js'
import type { LimiterOptions } from './limiter-types.js'
import type { Logger } from './logger.js'
import { checkFunction, checkObject, optionError } from './options/checks.js'
import type { RequestFacts } from './request-facts.js'
import type { Store } from './stores/store.js'

/**
 * Where every decision ends: counted in the limiter's totals, told to the observers that asked
 * and to `onDecision`.
 */
export class DecisionReport<Req> {
  readonly total: DecisionCounts = zeroCounts()
  /** Observers by what they want, so the request path checks one array length per concern. */
  private queueObservers: readonly LimiterObserver[] = []
  private storeObservers: readonly LimiterObserver[] = []
  /**
   * Whether to time store calls: someone asks, and the store is asynchronous (a synchronous
   * store answers within the call, so timing it would cost more than it tells).
   */
  timeStore = false

  constructor(
    private readonly store: Store,
    private readonly logger: Logger,
    private readonly onDecision: LimiterOptions<Req>['onDecision'],
  ) {}

  report(decision: Decision, facts: RequestFacts<Req> | undefined): Decision {
    const t = this.total
    if (decision.failedOpen) t.failedOpen++
    else if (decision.action === 'allow') t.allowed++
    else if (decision.action === 'queue') t.queued++
    else if (decision.action === 'drop') t.dropped++
    else t.rejected++
    if (decision.action === 'queue' && this.queueObservers.length > 0) {
      this.notifyQueued(decision.rule?.id ?? '', decision.waitMs)
    }
    const reason = decision.reason
    if (reason !== undefined) {
      if (reason === 'unmatched') t.unmatched++
      else if (reason === 'deny-list') t.denied++
      else t.allowListed++
    }
    if (this.onDecision && facts !== undefined) {
      try {
        this.onDecision(decision, facts)
      } catch (err) {
        this.logger.warn({ err }, 'onDecision threw; ignored')
      }
    }
    return decision
  }

  observe(observer: LimiterObserver): () => void {
    checkObject('observer', observer)
    if (observer === undefined) throw optionError('observer', 'an object', observer)
    // Read as plain fields: they are checked here, and called later on the observer itself.
    const fields = observer as Readonly<Record<string, unknown>>
    checkFunction('observer.queued', fields.queued)
    checkFunction('observer.storeCall', fields.storeCall)
    if (fields.queued) this.queueObservers = [...this.queueObservers, observer]
    if (fields.storeCall) this.storeObservers = [...this.storeObservers, observer]
    this.timeStore = this.storeObservers.length > 0 && this.store.synchronous !== true
    return () => {
      this.queueObservers = this.queueObservers.filter((x) => x !== observer)
      this.storeObservers = this.storeObservers.filter((x) => x !== observer)
      this.timeStore = this.storeObservers.length > 0 && this.store.synchronous !== true
    }
  }

  private notifyQueued(ruleId: string, waitMs: number): void {
    for (const o of this.queueObservers) {
      try {
        o.queued!(ruleId, waitMs)
      } catch (err) {
        this.logger.warn({ err }, 'observer.queued threw; ignored')
      }
    }
  }

  storeCallEnded(startedMs: number, ok: boolean): void {
    const durationMs = performance.now() - startedMs
    for (const o of this.storeObservers) {
      try {
        o.storeCall!(durationMs, ok)
      } catch (err) {
        this.logger.warn({ err }, 'observer.storeCall threw; ignored')
      }
    }
  }
}
