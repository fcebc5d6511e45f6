import type { Clock } from './clock.js'
import type { Decision } from './decision.js'
import { refundOf, type Entry, type QueuePlaces } from './limiter-entry.js'
import type { Logger } from './logger.js'
import type { CompiledRule } from './rules/compiled-rules.js'
import type { RefundEntry, Store } from './stores/store.js'
import type { RequestOutcome } from './limiter-types.js'

/** What an admitted request holds until it ends. */
interface Lease {
  released: boolean
  /** Entries recorded for the request: refunded when a queued client goes away. */
  readonly charged: RefundEntry[]
  /** Concurrency slots: refunded at release. */
  readonly slots: RefundEntry[]
  /** Queue places held while the request waits. */
  readonly queueKeys: string[]
  /** Units of rules that count only failures: refunded when the request succeeded. */
  readonly refundIfSucceeded: RefundEntry[]
  /** Units of rules that count only successes: refunded when the request failed. */
  readonly refundIfFailed: RefundEntry[]
}

/**
 * Queue places and leases: what decisions hold (concurrency slots, queue places, units charged
 * for a queued request) and their return, exactly once.
 */
export class Holdings implements QueuePlaces {
  private readonly leases = new WeakMap<Decision, Lease>()
  private readonly queued = new Map<string, number>()
  /** Concurrency slots held by requests this limiter admitted, per rule id. */
  readonly inFlight = new Map<string, number>()

  constructor(
    private readonly store: Store,
    private readonly clock: Clock,
    private readonly logger: Logger,
  ) {}

  /** Take a place in the rule's queue for this key; undefined when the queue is full. */
  takePlace(rule: CompiledRule, key: string, maxQueue: number): string | undefined {
    const k = `${rule.stateId}\u0000${key}`
    const waiting = this.queued.get(k) ?? 0
    if (waiting >= maxQueue) return undefined
    this.queued.set(k, waiting + 1)
    return k
  }

  leavePlace(k: string): void {
    const left = (this.queued.get(k) ?? 1) - 1
    if (left > 0) this.queued.set(k, left)
    else this.queued.delete(k)
  }

  /**
   * Record what an admitted decision holds (concurrency slots; for a queued one, the units
   * charged and the queue places) and free the places it does not keep.
   */
  settle(decision: Decision, entries: readonly Entry[]): void {
    // The common case, one rule that neither queues, holds a slot nor counts by outcome:
    // nothing to hold or free.
    if (entries.length === 1) {
      const e = entries[0]!
      const rt = e.rt
      if (
        e.place === undefined &&
        !rt.holdsSlot &&
        !rt.countsOutcome &&
        decision.action !== 'queue'
      )
        return
    }
    let lease: Lease | undefined
    if (decision.allowed) {
      let holds = decision.action === 'queue'
      for (let i = 0; i < entries.length && !holds; i++) {
        const rt = entries[i]!.rt
        holds = rt.holdsSlot || rt.countsOutcome
      }
      if (holds) lease = this.openLease(decision, entries)
    }
    for (let i = 0; i < entries.length; i++) {
      const place = entries[i]!.place
      if (place !== undefined && !lease?.queueKeys.includes(place)) this.leavePlace(place)
    }
  }

  private openLease(decision: Decision, entries: readonly Entry[]): Lease | undefined {
    let lease: Lease | undefined
    for (let i = 0; i < entries.length; i++) {
      const e = entries[i]!
      const o = decision.outcomes[i]!
      const concurrency = e.rt.holdsSlot && o.allowed
      // A shadow entry was recorded only when it allowed on its own.
      const byOutcome = e.rt.countsOutcome && o.allowed
      if (!concurrency && !byOutcome && decision.action !== 'queue') continue
      lease ??= {
        released: false,
        charged: [],
        slots: [],
        queueKeys: [],
        refundIfSucceeded: [],
        refundIfFailed: [],
      }
      // Copies: the entry objects may be reused by the next check.
      if (concurrency) {
        lease.slots.push(refundOf(e))
        const id = e.rule.rule.id
        this.inFlight.set(id, (this.inFlight.get(id) ?? 0) + 1)
      }
      if (byOutcome) {
        if (e.rule.rule.count === 'failed') lease.refundIfSucceeded.push(refundOf(e))
        else lease.refundIfFailed.push(refundOf(e))
      }
      if (decision.action === 'queue' && o.allowed) {
        lease.charged.push(refundOf(e))
        // The place taken in check() now belongs to the waiting request.
        if (o.waitMs > 0 && e.place !== undefined) lease.queueKeys.push(e.place)
      }
    }
    if (lease) this.leases.set(decision, lease)
    return lease
  }

  refund(entries: readonly RefundEntry[]): void {
    try {
      const pending = this.store.refund(entries, this.clock())
      if (pending) pending.catch((err: unknown) => this.logger.warn({ err }, 'store refund failed'))
    } catch (err) {
      this.logger.warn({ err }, 'store refund failed')
    }
  }

  private dropSlots(lease: Lease): void {
    for (const slot of lease.slots) {
      const id = slot.rule.rule.id
      const left = (this.inFlight.get(id) ?? 1) - 1
      if (left > 0) this.inFlight.set(id, left)
      else this.inFlight.delete(id)
    }
  }

  private leaveQueue(lease: Lease): void {
    for (const k of lease.queueKeys) this.leavePlace(k)
    lease.queueKeys.length = 0
  }

  release(decision: Decision, outcome?: RequestOutcome): void {
    const lease = this.leases.get(decision)
    if (!lease || lease.released) return
    lease.released = true
    this.leaveQueue(lease)
    this.dropSlots(lease)
    const uncounted =
      outcome === 'succeeded'
        ? lease.refundIfSucceeded
        : outcome === 'failed'
          ? lease.refundIfFailed
          : undefined
    // One store call for the slots and the uncounted units: one round trip with Redis.
    const back = uncounted?.length ? lease.slots.concat(uncounted) : lease.slots
    if (back.length > 0) this.refund(back)
  }

  waitInQueue(decision: Decision, signal?: AbortSignal): Promise<boolean> {
    const lease = this.leases.get(decision)
    if (decision.action !== 'queue' || !lease) return Promise.resolve(decision.allowed)
    return new Promise<boolean>((resolve) => {
      const abandon = (): void => {
        clearTimeout(timer)
        if (!lease.released) {
          lease.released = true
          this.leaveQueue(lease)
          this.dropSlots(lease)
          this.refund(lease.charged)
        }
        resolve(false)
      }
      const timer = setTimeout(() => {
        signal?.removeEventListener('abort', abandon)
        this.leaveQueue(lease)
        resolve(true)
      }, decision.waitMs)
      if (signal?.aborted) abandon()
      else signal?.addEventListener('abort', abandon, { once: true })
    })
  }
}
