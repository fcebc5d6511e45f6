import type { Clock } from './clock.js'
import type { Decision } from './decision.js'
import { refuseReservation, type AlgorithmResult } from './algorithms/algorithm.js'
import type { Entry } from './limiter-entry.js'
import type { FailOpenLog } from './limiter-fail-open-log.js'
import type { CompiledRule } from './rules/compiled-rules.js'
import type { RefundEntry, Store } from './stores/store.js'
import type { RequestOutcome } from './limiter-types.js'
import { timerDelay } from './timer-delay.js'
import { stillHeld, type HeldEntry, type StateGenerations } from './limiter-state-generations.js'

/** What an admitted request holds until it ends. */
interface Lease {
  released: boolean
  /** Entries recorded for the request: refunded when a queued client goes away. */
  readonly charged: HeldEntry[]
  /** Concurrency slots: refunded at release. */
  readonly slots: HeldEntry[]
  /** Queue places held while the request waits. */
  readonly queueKeys: string[]
  /** Units of rules that count only failures: refunded when the request succeeded. */
  readonly refundIfSucceeded: HeldEntry[]
  /** Units of rules that count only successes: refunded when the request failed. */
  readonly refundIfFailed: HeldEntry[]
  /** When the request started, for rules that measure its latency (adaptive); else -1. */
  startedMs: number
  /** A queued request's wait in `waitInQueue`, until it ends either way. */
  wait?: Wait | undefined
  /** Its wait in `waitInQueue` ran out: its turn has come, and a later call resolves true at once. */
  served?: boolean | undefined
  /** Frees the queue places of a queued decision nobody waits for or releases. */
  placeTimer?: ReturnType<typeof setTimeout> | undefined
}

/** One queued request waiting out its turn. */
interface Wait {
  readonly promise: Promise<boolean>
  readonly timer: ReturnType<typeof setTimeout>
  readonly settle: (admitted: boolean) => void
  /**
   * The signals of every `waitInQueue` call joined to this wait, each with its listener: all of
   * them are disarmed when the wait ends, or a signal aborted later (while the request is served)
   * would end a lease that is no longer waiting.
   */
  readonly signals: { readonly signal: AbortSignal; readonly onAbort: () => void }[]
}

/**
 * Where a decision keeps its lease: a property of the decision object itself, under a symbol of
 * the limiter that decided (a decision released through another limiter finds no lease there,
 * so it cannot free that limiter's slots or refund into its store). A WeakMap from decision to
 * lease did the same, but inserting a fresh key into a WeakMap on every request that holds a
 * slot cost more than the rest of the decision (docs/benchmarks.md).
 */
type Leased = Record<symbol, Lease | undefined>

// Shared empty lists for the fields a lease of one concurrency slot never fills (never pushed to).
const NO_ENTRIES: HeldEntry[] = []
const NO_KEYS: string[] = []

/**
 * How long after its wait ends a queued decision that nobody waited for or released keeps its
 * queue places (docs/limiter.md#queueing): long enough for a caller that waits late.
 */
const QUEUE_PLACE_GRACE_MS = 1000

const REFUND_FAILED =
  'store refund failed; what the request held stays taken until its state expires or refills'

/** Receives the latency of a request that held adaptive slots, when it is released. */
export type LatencySink = (slots: readonly RefundEntry[], latencyMs: number, nowMs: number) => void

/**
 * Queue places and leases: what decisions hold (concurrency slots, queue places, units charged
 * for a queued request) and their return, exactly once.
 */
export class Holdings {
  private readonly lease = Symbol('floodgate.lease')
  private readonly queued = new Map<string, number>()
  /**
   * Concurrency slots held by requests this limiter admitted, per rule id; a rule whose last
   * request ended stays at 0 (see {@link Holdings.inFlightNow}).
   */
  private readonly inFlight = new Map<string, number>()
  /** Leases of the requests waiting in `waitInQueue` now: close() ends them. */
  private readonly waiting = new Set<Lease>()
  /** Set by close(): the store is closing or closed, so nothing is given back to it any more. */
  private closed = false

  constructor(
    private readonly store: Store,
    private readonly clock: Clock,
    /** Where a failed refund is told: throttled, since a broken store fails every release. */
    private readonly refundLog: FailOpenLog,
    private readonly latency?: LatencySink | undefined,
    /** Set when the store drops the state of rules that leave: nothing goes back to a dropped state. */
    private readonly generations?: StateGenerations | undefined,
  ) {}

  /**
   * Just before the store is asked about a request: note in each entry the life of its state
   * then, the life in which the store records what it charges (see `Entry.generation`). Read
   * when the answer is in, it could be a later life: a rules swap while an asynchronous store
   * decides may drop the state and let the rule come back with a fresh one, and what the request
   * gives back would then free a slot another request holds there, or credit units nobody spent.
   * Only for a request that may give something back (a slot, outcome-counted units, a queue's
   * reservation with every other unit of its request); no work for a store that drops nothing.
   */
  stamp(entries: readonly Entry[]): void {
    const generations = this.generations
    if (generations === undefined) return
    let holds = false
    for (let i = 0; i < entries.length && !holds; i++) {
      const e = entries[i]!
      holds = e.rt.holdsSlot || e.rt.countsOutcome || e.maxWaitMs > 0
    }
    for (let i = 0; i < entries.length; i++) {
      const e = entries[i]!
      e.generation = holds ? generations.of(e) : undefined
    }
  }

  /**
   * What the entry holds, with the life of the state it was charged in (see
   * {@link Holdings.stamp}) and, for a slot, the store's name for it (`AlgorithmResult.lease`).
   */
  held(e: Entry, lease?: number): HeldEntry {
    // A copy: the entry objects may be reused by the next check.
    return { rule: e.rule, key: e.key, cost: e.cost, lease, generation: e.generation }
  }

  private leaseOf(decision: Decision): Lease | undefined {
    return (decision as unknown as Leased)[this.lease]
  }

  /** Take a place in the rule's queue for this key; undefined when the queue is full. */
  private takePlace(rule: CompiledRule, key: string, maxQueue: number): string | undefined {
    const k = `${rule.stateId}\u0000${key}`
    const waiting = this.queued.get(k) ?? 0
    if (waiting >= maxQueue) return undefined
    this.queued.set(k, waiting + 1)
    return k
  }

  /**
   * Before the store call: mark each queueing entry whose client's queue is full now, so the
   * store refuses a wait at once instead of reserving units to be given back. A queue that
   * fills while the call is in flight is still caught by {@link Holdings.joinQueues}. No work
   * while nobody waits.
   */
  markFullQueues(entries: readonly Entry[]): void {
    const queued = this.queued
    const any = queued.size > 0
    for (let i = 0; i < entries.length; i++) {
      const e = entries[i]!
      if (e.maxWaitMs <= 0) continue
      const onLimit = e.rt.compiled.rule.onLimit
      e.queueFull =
        any &&
        onLimit.action === 'queue' &&
        (queued.get(`${e.rt.compiled.stateId}\u0000${e.key}`) ?? 0) >= onLimit.maxQueue
    }
  }

  leavePlace(k: string): void {
    const left = (this.queued.get(k) ?? 1) - 1
    if (left > 0) this.queued.set(k, left)
    else this.queued.delete(k)
  }

  /**
   * Take a queue place for each entry the store's answer makes wait. The place is taken here,
   * once the answer is in, and not when the request is sent: a request still waiting for an
   * asynchronous store must not hold a place it may not need (it may pass at once), or a
   * concurrent request of the same client would find the queue full where a synchronous store
   * would have queued it.
   *
   * An entry whose queue is full is refused instead (`retryAfterMs`: its wait, when the same
   * request could pass without queueing). When the queue filled while the store call was in
   * flight (or the store ignores `queueFull`), the store already charged the reservation by
   * then, so what it recorded is given back: every entry when an enforced entry is refused (the
   * request is refused, all-or-nothing), only the refused entry when it is a shadow one.
   *
   * @returns the results to judge: `results` itself when every queue had room
   */
  joinQueues(entries: Entry[], results: readonly AlgorithmResult[]): readonly AlgorithmResult[] {
    const n = entries.length
    let waits = false
    for (let i = 0; i < n; i++) {
      const r = results[i]!
      // A refused enforced entry: the store charged nothing, and nobody waits.
      if (!r.allowed && !entries[i]!.shadow) return results
      if (r.allowed && r.waitMs > 0) waits = true
    }
    if (!waits) return results
    let out: AlgorithmResult[] | undefined
    let refused = false
    for (let i = 0; i < n; i++) {
      const r = results[i]!
      const e = entries[i]!
      const onLimit = e.rt.compiled.rule.onLimit
      if (!r.allowed || r.waitMs <= 0 || onLimit.action !== 'queue') continue
      e.place = this.takePlace(e.rt.compiled, e.key, onLimit.maxQueue)
      if (e.place !== undefined) continue
      out ??= results.slice()
      const full = { ...r }
      refuseReservation(full)
      out[i] = full
      if (!e.shadow) refused = true
    }
    if (out === undefined) return results
    const back: HeldEntry[] = []
    for (let i = 0; i < n; i++) {
      const e = entries[i]!
      if (!results[i]!.allowed || (!refused && out[i]!.allowed)) continue
      back.push(this.held(e))
      if (refused && e.place !== undefined) {
        this.leavePlace(e.place)
        e.place = undefined
      }
    }
    this.refund(back)
    return out
  }

  /**
   * Record what an admitted decision holds (concurrency slots; for a queued one, the units
   * charged and the queue places) and free the places it does not keep.
   */
  settle(decision: Decision, entries: readonly Entry[], results: readonly AlgorithmResult[]): void {
    // The common case, one rule that neither queues nor counts by outcome: nothing to hold or
    // free, or one slot.
    if (entries.length === 1) {
      const e = entries[0]!
      const rt = e.rt
      if (e.place === undefined && !rt.countsOutcome && decision.action !== 'queue') {
        // One rule holding one slot (concurrency, adaptive): a lease with a single list.
        if (rt.holdsSlot && decision.allowed && decision.outcomes[0]!.allowed) {
          ;(decision as unknown as Leased)[this.lease] = this.slotLease(e, decision, results[0]!)
        }
        return
      }
    }
    let lease: Lease | undefined
    if (decision.allowed) {
      let holds = decision.action === 'queue'
      for (let i = 0; i < entries.length && !holds; i++) {
        const rt = entries[i]!.rt
        holds = rt.holdsSlot || rt.countsOutcome
      }
      if (holds) lease = this.openLease(decision, entries, results)
    }
    for (let i = 0; i < entries.length; i++) {
      const place = entries[i]!.place
      if (place !== undefined && !lease?.queueKeys.includes(place)) this.leavePlace(place)
    }
  }

  /** The slots held now, per rule id, for the rules with any (adaptive rules' are the gates'). */
  inFlightNow(): Map<string, number> {
    const out = new Map<string, number>()
    for (const [id, n] of this.inFlight) {
      if (n > 0) out.set(id, n)
      // Read rarely (counters()), so the rules that left keep no entry for long.
      else this.inFlight.delete(id)
    }
    return out
  }

  /**
   * Count a slot taken (+1) or given back (-1) under its rule. An adaptive rule's gate counts
   * its slots (per rule, when several rules share it; the limiter's counters() reads them
   * there): counted here too, a rule that left and came back would count the slots of the
   * requests of the one that left.
   */
  private count(rule: RefundEntry['rule'], step: 1 | -1): void {
    if (rule.rule.adaptive) return
    const id = rule.rule.id
    // Kept at 0 rather than deleted: one rule id, set and deleted on every request, costs.
    this.inFlight.set(id, Math.max(0, (this.inFlight.get(id) ?? 0) + step))
  }

  private slotLease(e: Entry, decision: Decision, result: AlgorithmResult): Lease {
    this.count(e.rule, 1)
    return {
      released: false,
      charged: NO_ENTRIES,
      slots: [this.held(e, result.lease)],
      queueKeys: NO_KEYS,
      refundIfSucceeded: NO_ENTRIES,
      refundIfFailed: NO_ENTRIES,
      startedMs: e.rule.rule.adaptive ? this.clock() + decision.waitMs : -1,
    }
  }

  private openLease(
    decision: Decision,
    entries: readonly Entry[],
    results: readonly AlgorithmResult[],
  ): Lease | undefined {
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
        startedMs: -1,
      }
      // Copies: the entry objects may be reused by the next check.
      if (concurrency) {
        lease.slots.push(this.held(e, results[i]!.lease))
        // A queued request starts when its wait is over.
        if (lease.startedMs < 0 && e.rule.rule.adaptive) {
          lease.startedMs = this.clock() + decision.waitMs
        }
        this.count(e.rule, 1)
      }
      if (byOutcome) {
        if (e.rule.rule.count === 'failed') lease.refundIfSucceeded.push(this.held(e))
        else lease.refundIfFailed.push(this.held(e))
      }
      if (decision.action === 'queue' && o.allowed) {
        lease.charged.push(this.held(e))
        // The place taken in check() now belongs to the waiting request.
        if (o.waitMs > 0 && e.place !== undefined) lease.queueKeys.push(e.place)
      }
    }
    if (lease) {
      ;(decision as unknown as Leased)[this.lease] = lease
      if (lease.queueKeys.length > 0) this.expirePlaces(lease, decision.waitMs)
    }
    return lease
  }

  /**
   * Give back what a request holds. Every return goes through here: what was charged in a
   * state the store has since dropped (its rule left the set) is left out, since giving it to
   * the state that replaced it would free what another request holds there.
   */
  refund(entries: readonly HeldEntry[]): void {
    // A closed store has nothing to give back to: its state is gone (MemoryStore) or expires
    // on its own (Redis), and the call would only fail.
    if (this.closed) return
    void this.refundNow(entries)
  }

  /** Give the entries back; resolves once the store has (a failure is logged, never thrown). */
  private refundNow(held: readonly HeldEntry[]): Promise<void> | undefined {
    const entries = stillHeld(held)
    if (entries.length === 0) return undefined
    try {
      const pending = this.store.refund(entries, this.clock())
      if (pending) {
        return pending.then(undefined, (err: unknown) => this.refundFailed(err))
      }
    } catch (err) {
      this.refundFailed(err)
    }
    return undefined
  }

  private refundFailed(err: unknown): void {
    this.refundLog.warn({ err, code: 'FG_WRN_STORE_REFUND_FAILED' }, REFUND_FAILED)
  }

  private dropSlots(lease: Lease): void {
    for (const slot of lease.slots) this.count(slot.rule, -1)
  }

  private leaveQueue(lease: Lease): void {
    if (lease.queueKeys.length === 0) return
    for (const k of lease.queueKeys) this.leavePlace(k)
    lease.queueKeys.length = 0
    clearTimeout(lease.placeTimer)
    lease.placeTimer = undefined
  }

  /**
   * A caller of check() may neither wait on a queued decision nor release it: its places go
   * back once its wait and a grace are over, else its client's queue stays full for good.
   * Unreferenced, so it never keeps the process alive; leaveQueue clears it, and a place left
   * here is not left again by a later wait or release (the lease's queueKeys are emptied).
   */
  private expirePlaces(lease: Lease, waitMs: number): void {
    // Within a grace of the timer's ceiling, the grace is cut short: past it the timer would
    // fire at once, and the place go back while the request still waits its turn.
    const ms = timerDelay(waitMs + QUEUE_PLACE_GRACE_MS)
    lease.placeTimer = setTimeout(() => this.leaveQueue(lease), ms)
    lease.placeTimer.unref?.()
  }

  release(decision: Decision, outcome?: RequestOutcome): void {
    const lease = this.leaseOf(decision)
    if (!lease || lease.released) return
    // Released while still waiting its turn, or never served: the request used nothing of
    // what was reserved for it, so all of it goes back (the adapters release a queued
    // request whose client left as the wait ended as 'abandoned').
    if (lease.wait !== undefined || (outcome === 'abandoned' && lease.charged.length > 0)) {
      this.abandon(lease)
      return
    }
    lease.released = true
    this.leaveQueue(lease)
    this.dropSlots(lease)
    // A request never served has no latency to say anything about the service.
    if (lease.startedMs >= 0 && this.latency && outcome !== 'abandoned') {
      const nowMs = this.clock()
      this.latency(lease.slots, nowMs - lease.startedMs, nowMs)
    }
    const uncounted =
      outcome === 'succeeded'
        ? lease.refundIfSucceeded
        : outcome === 'failed' || outcome === 'abandoned'
          ? lease.refundIfFailed
          : undefined
    // One store call for the slots and the uncounted units: one round trip with Redis.
    const back = uncounted?.length ? lease.slots.concat(uncounted) : lease.slots
    if (back.length > 0) this.refund(back)
  }

  /**
   * End a queued request that will not be served: free its place and slots, and give back
   * every unit recorded for it (`charged` holds them all, slots and outcome-counted units
   * included), into `batch` when close() sends them in one call, else at once. Its wait, if
   * any, resolves false.
   */
  private abandon(lease: Lease, batch?: HeldEntry[]): void {
    if (!lease.released) {
      lease.released = true
      this.leaveQueue(lease)
      this.dropSlots(lease)
      const back = lease.charged
      if (batch !== undefined) batch.push(...back)
      else if (back.length > 0) this.refund(back)
    }
    this.endWait(lease, false)
  }

  /** Settle the lease's wait, if it has one: its timer and listeners go, its promise resolves. */
  private endWait(lease: Lease, admitted: boolean): void {
    const wait = lease.wait
    if (wait === undefined) return
    lease.wait = undefined
    this.waiting.delete(lease)
    clearTimeout(wait.timer)
    for (const { signal, onAbort } of wait.signals) signal.removeEventListener('abort', onAbort)
    wait.settle(admitted)
  }

  waitInQueue(decision: Decision, signal?: AbortSignal): Promise<boolean> {
    const lease = this.leaseOf(decision)
    if (decision.action !== 'queue' || !lease) return Promise.resolve(decision.allowed)
    // Released (its client left, or the limiter closed): it will not be served.
    if (lease.released || this.closed) {
      this.abandon(lease)
      return Promise.resolve(false)
    }
    // Its turn came in an earlier call: it is being served, and a signal now ends nothing.
    if (lease.served === true) return Promise.resolve(true)
    const onAbort = (): void => this.abandon(lease)
    if (signal?.aborted) {
      onAbort()
      return Promise.resolve(false)
    }
    // Waited for twice: one wait, one timer; either signal ends it, until it ends.
    let wait = lease.wait
    if (wait === undefined) {
      let settle!: (admitted: boolean) => void
      const promise = new Promise<boolean>((resolve) => (settle = resolve))
      const timer = setTimeout(() => {
        lease.served = true
        this.leaveQueue(lease)
        this.endWait(lease, true)
      }, timerDelay(decision.waitMs))
      wait = lease.wait = { promise, timer, settle, signals: [] }
      // From here the wait's own timer frees the places.
      clearTimeout(lease.placeTimer)
      lease.placeTimer = undefined
      this.waiting.add(lease)
    }
    if (signal !== undefined) {
      signal.addEventListener('abort', onAbort, { once: true })
      wait.signals.push({ signal, onAbort })
    }
    return wait.promise
  }

  /**
   * End every wait (each resolves false) and give back what those requests reserved, in one
   * store call awaited here: close() closes the store only after it. From then on nothing is
   * given back (see {@link Holdings.refund}); slots still held stay with the store.
   */
  async close(): Promise<void> {
    if (this.closed) return
    const back: HeldEntry[] = []
    for (const lease of [...this.waiting]) this.abandon(lease, back)
    this.closed = true
    if (back.length > 0) await this.refundNow(back)
  }
}
