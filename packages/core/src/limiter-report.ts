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
        this.settled(this.onDecision(decision, facts), 'onDecision')
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
    const queues = fields.queued !== undefined
    const stores = fields.storeCall !== undefined
    if (queues) this.queueObservers = [...this.queueObservers, observer]
    if (stores) this.storeObservers = [...this.storeObservers, observer]
    this.timeStore = this.storeObservers.length > 0 && this.store.synchronous !== true
    let subscribed = true
    return () => {
      if (!subscribed) return
      subscribed = false
      // One entry of this subscription only: the same object may be subscribed again, and
      // each subscription ends by its own function.
      if (queues) this.queueObservers = withoutOne(this.queueObservers, observer)
      if (stores) this.storeObservers = withoutOne(this.storeObservers, observer)
      this.timeStore = this.storeObservers.length > 0 && this.store.synchronous !== true
    }
  }

  private notifyQueued(ruleId: string, waitMs: number): void {
    for (const o of this.queueObservers) {
      try {
        this.settled(o.queued!(ruleId, waitMs), 'observer.queued')
      } catch (err) {
        this.logger.warn({ err }, 'observer.queued threw; ignored')
      }
    }
  }

  storeCallEnded(startedMs: number, ok: boolean): void {
    const durationMs = performance.now() - startedMs
    for (const o of this.storeObservers) {
      try {
        this.settled(o.storeCall!(durationMs, ok), 'observer.storeCall')
      } catch (err) {
        this.logger.warn({ err }, 'observer.storeCall threw; ignored')
      }
    }
  }

  /**
   * What a callback returned. Its type says void, but an async function fits that type: its
   * promise's rejection, left alone, is an unhandled rejection, which ends a Node process. So a
   * thenable is caught and logged like a throw. One comparison when the callback returns nothing.
   */
  private settled(answer: unknown, what: string): void {
    if (answer === undefined || answer === null) return
    const then = (answer as { then?: unknown }).then
    if (typeof then !== 'function') return
    const warn = (err: unknown): void => this.logger.warn({ err }, `${what} rejected; ignored`)
    try {
      ;(then as PromiseLike<unknown>['then']).call(answer, undefined, warn)
    } catch (err) {
      warn(err)
    }
  }
}

/** The list without one occurrence of `x` (a new array: a dispatch under way keeps its own). */
function withoutOne<T>(list: readonly T[], x: T): readonly T[] {
  const i = list.indexOf(x)
  return i < 0 ? list : [...list.slice(0, i), ...list.slice(i + 1)]
}
