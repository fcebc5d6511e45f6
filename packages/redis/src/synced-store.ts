import { MemoryStore, type Clock, type Logger, type Store } from '@floodgate/core'
import type { RuleTier } from '@floodgate/core/rules'
import {
  EPSILON,
  scopeLogger,
  type AlgorithmResult,
  type ConsumeEntry,
  type RefundEntry,
  type StateEntry,
} from '@floodgate/core/algorithms'
import { RedisConnection, warnUnsafeClient, type RedisClient } from './connection.js'
import { RecordedLimits } from './recorded-limits.js'
import { throttledWarn } from './throttled-warn.js'
import { adoptFleetLevel, holdBack, localWaitMs, sharedRetryAfterMs } from './synced/fleet-share.js'
import { resolveSyncedOptions, type SyncedStoreOptions } from './synced/options.js'
import {
  checkShareable,
  idleMs,
  interval,
  isShareable,
  rememberMs,
  unsupported,
} from './synced/rule-maths.js'
import { SyncExchange, type FleetLevel } from './synced/sync-exchange.js'
import { TrackedKeys, hasUnsent, type Tracked } from './synced/tracked-keys.js'

export type { SyncedStoreOptions } from './synced/options.js'

/** How long close() waits for a reconnect or a late reply before its next round. */
const CLOSE_RETRY_MS = 10

/** When a new client key refused for want of room may ask again (as MemoryStore answers). */
const STORE_FULL_RETRY_MS = 1000

/**
 * Decides locally, shares consumption through Redis: the "synced" distributed mode.
 *
 * Every decision is made by a local {@link MemoryStore}, synchronously, at memory speed.
 * Every `syncMs` the store sends, per client key it served recently, the units it admitted
 * since the last sync to one fleet bucket per key in Redis (refilled by Redis's clock, with no
 * floor, so what the fleet over-admits stays owed), and sets its local bucket to the fleet
 * bucket's level plus what it admitted since. While the fleet bucket has room, each of the
 * hosts sharing the key gets only its share of that room, so hosts that all start a burst at
 * once spend about one bucket between them; a host that runs out of its share, or starts a
 * burst, syncs early. With one host it answers exactly like a MemoryStore.
 *
 * See docs/distributed.md for the bound and the measured over-admission. Only token bucket
 * and GCRA rules are supported: they carry debt.
 *
 * Redis failures never reach a request: decisions stay local, a failed sync is logged once per
 * interval, and the units not yet known to be in Redis are sent again by the next sync. Each
 * batch carries a sequence number that Redis records per host, so a batch whose reply was
 * lost and is sent again is applied once.
 *
 * @example
 * ```ts
 * const store = createSyncedStore({ url: process.env.REDIS_URL, syncMs: 100 })
 * const limiter = createLimiter({ rules, store })
 * ```
 */
export class SyncedStore implements Store {
  /** Decisions are local: `consume` never returns a promise. */
  readonly synchronous = true
  /** The ioredis client in use. */
  readonly client: RedisClient
  /**
   * Resolves once the client is connected, or once it has ended without connecting (the store
   * was closed first); never rejects. Until then decisions are local only.
   * Reading it connects a `lazyConnect` client that nothing connected yet.
   */
  get ready(): Promise<void> {
    this.connection.connectIfLazy()
    return this.connection.ready
  }
  private readonly connection: RedisConnection
  private readonly recorded: RecordedLimits
  private readonly exchange: SyncExchange
  private readonly memory: MemoryStore
  private readonly keys: TrackedKeys
  private readonly syncMs: number
  private readonly clock: Clock
  /** Redis trouble, at most one line per 10 s. */
  private readonly warn: ReturnType<typeof throttledWarn>
  /** Keys seen for the first time, whose fleet level the next read takes. */
  private readonly unread: Tracked[] = []
  /** Keys an early round should sync: a burst began, or a share ran out. */
  private readonly urgent: Tracked[] = []
  private earlyTimer: NodeJS.Timeout | undefined
  private lastEarlyMs = Date.now()
  private readScheduled = false
  private round: Promise<void> = Promise.resolve()
  private reads: Promise<void> = Promise.resolve()
  private timer: NodeJS.Timeout | undefined
  private closed = false
  private closing: Promise<void> | undefined
  private failed = 0
  private readonly timeoutMs: number
  /** Warnings that must not be dropped (what close() could not send). */
  private readonly log: Logger

  /**
   * @param options - Where Redis is and how often to sync; see {@link SyncedStoreOptions}.
   * @throws OptionsError when the options are inconsistent or out of range.
   */
  constructor(options: SyncedStoreOptions = {}) {
    const o = resolveSyncedOptions(options)
    this.memory = new MemoryStore({ maxKeys: o.maxKeys })
    this.keys = new TrackedKeys(o.prefix, o.maxKeys ?? 1_000_000, (t) => this.readSoon(t))
    this.connection = new RedisConnection(
      options,
      o.timeoutMs,
      o.logger && scopeLogger(o.logger, 'floodgate-synced'),
    )
    if (options.client) warnUnsafeClient(options.client, o.logger, 'floodgate-synced')
    this.client = this.connection.client
    this.syncMs = o.syncMs
    this.timeoutMs = o.timeoutMs
    this.clock = o.clock
    this.exchange = new SyncExchange(this.connection, o)
    this.log = scopeLogger(o.logger, 'floodgate-synced')
    this.warn = throttledWarn(this.log)
    this.recorded = new RecordedLimits(this.client, o.prefix, o.timeoutMs, this.warn)
    this.schedule()
  }

  /** Sync rounds that failed or missed their deadline (their units were kept for the next). */
  get failedSyncs(): number {
    return this.failed
  }

  /** Number of (rule, client key) pairs this host currently shares with the fleet. */
  get trackedKeys(): number {
    return this.keys.size
  }

  /** Decide locally; the units admitted are shared with the fleet at the next sync. */
  consume(entries: readonly ConsumeEntry[], nowMs: number): readonly AlgorithmResult[] {
    if (this.keys.full && !this.roomFor(entries)) {
      return this.storeFull(entries, nowMs)
    }
    // Each entry's shared key, found once (no array unless some key is shared).
    let tracked: (Tracked | undefined)[] | undefined
    let queueing = false
    for (let i = 0; i < entries.length; i++) {
      const e = entries[i]!
      if (!isShareable(e.rule)) throw unsupported(e.rule.rule.id, e.rule.algorithm.name)
      const t = this.sharedEntry(e, nowMs)
      if (t === undefined) continue
      ;(tracked ??= new Array<Tracked | undefined>(entries.length))[i] = t
      if (e.maxWaitMs > 0) queueing = true
    }
    const results =
      tracked && queueing
        ? this.queuedAtShare(entries, tracked, nowMs)
        : this.memory.consume(entries, nowMs)
    for (let i = 0; i < entries.length; i++) {
      if (!entries[i]!.shadow && !results[i]!.allowed) return this.refused(results, tracked, nowMs)
    }
    for (let i = 0; i < entries.length; i++) {
      const e = entries[i]!
      if (e.shadow && !results[i]!.allowed) continue
      // A shadow rule's new key finds no room (see storeFull): it is decided, not shared.
      if (e.shadow && this.keys.full && !this.keys.hasRoomFor(e.rule.stateId, e.key)) continue
      const t = this.keys.track(e.rule, e.key)
      t.pending += e.cost
      // A burst starting, or this host's share spent: the others should learn soon.
      if (nowMs - t.lastUseMs > this.syncMs || (t.share < 1 && results[i]!.remaining === 0)) {
        this.markUrgent(t)
      }
      t.lastUseMs = nowMs
      t.fullAtMs = Math.max(t.fullAtMs, nowMs) + e.cost * interval(e.rule)
    }
    return results
  }

  /** Whether every non-shadow entry's key is shared already or can be added to the table. */
  private roomFor(entries: readonly ConsumeEntry[]): boolean {
    for (const e of entries) {
      if (!e.shadow && !this.keys.hasRoomFor(e.rule.stateId, e.key)) return false
    }
    return true
  }

  /**
   * The table of shared keys is full of keys whose units Redis has not confirmed (an outage
   * under a flood of new client keys): a new key is refused, as MemoryStore refuses one when it
   * is full of state that is not fresh, rather than forgetting units or growing without bound.
   * Nothing is recorded.
   */
  private storeFull(entries: readonly ConsumeEntry[], nowMs: number): readonly AlgorithmResult[] {
    return this.memory.peek(entries, nowMs).map((r, i) => {
      const e = entries[i]!
      if (e.shadow || this.keys.get(e.rule.stateId, e.key) !== undefined) return r
      return {
        ...r,
        allowed: false,
        waitMs: 0,
        remaining: 0,
        retryAfterMs: STORE_FULL_RETRY_MS,
        storeFull: true,
      }
    })
  }

  /**
   * The entry's key when other hosts share it and its fleet level is known, after this host's
   * local bucket was brought to what it is owed at `nowMs` ({@link holdBack}); else undefined.
   */
  private sharedEntry(e: StateEntry, nowMs: number): Tracked | undefined {
    const t = this.keys.find(e.rule, e.key)
    if (!t?.known || t.share >= 1) return undefined
    if (holdBack(this.memory, t, nowMs)) this.markUrgent(t)
    return t
  }

  /**
   * Consume with queueing rules: the local bucket answers waits as if it refilled at the
   * rule's rate, but past a learned debt this host refills at its share only. Ask it for the
   * wait that is `maxWaitMs` at the share, and answer each wait at the share: the time at
   * which a request that queues is paid for here.
   */
  private queuedAtShare(
    entries: readonly ConsumeEntry[],
    tracked: readonly (Tracked | undefined)[],
    nowMs: number,
  ): AlgorithmResult[] {
    const asked = entries.map((e, i) => {
      const t = tracked[i]
      return t && e.maxWaitMs > 0 ? { ...e, maxWaitMs: localWaitMs(t, e.maxWaitMs, nowMs) } : e
    })
    return this.memory.consume(asked, nowMs).map((r, i) => {
      const t = tracked[i]
      if (!t || !r.allowed || r.waitMs <= 0) return r
      const waitMs = Math.min(entries[i]!.maxWaitMs, sharedRetryAfterMs(t, r.waitMs, nowMs))
      return { ...r, waitMs }
    })
  }

  /** Nothing was recorded: say when each refused entry could pass at this host's share. */
  private refused(
    results: readonly AlgorithmResult[],
    tracked: readonly (Tracked | undefined)[] | undefined,
    nowMs: number,
  ): readonly AlgorithmResult[] {
    if (tracked === undefined) return results
    return results.map((r, i) => {
      const t = tracked[i]
      if (t === undefined) return r
      // Refused while the fleet had room elsewhere: ask for a fresh share at once.
      if (t.room > EPSILON) this.markUrgent(t)
      return r.allowed ? r : { ...r, retryAfterMs: sharedRetryAfterMs(t, r.retryAfterMs, nowMs) }
    })
  }

  /**
   * Give units back locally at once; the fleet gets them back with the next sync (a key no
   * longer shared here is shared again to send them, when the table has room for it).
   */
  refund(entries: readonly RefundEntry[], nowMs: number): void {
    this.memory.refund(entries, nowMs)
    for (const e of entries) {
      let t = this.keys.get(e.rule.stateId, e.key)
      if (t === undefined) {
        // Dropped from the table (idle, or for room past maxKeys) once Redis had confirmed its
        // units: the fleet counter still holds the ones refunded. Share the key again (read
        // first, like any new key) so the refund reaches it; forgotten, every host would admit
        // that much less. A table full of units to send keeps its bound, and a closed store
        // shares nothing new: the refund stays local.
        if (this.closed || !this.keys.hasRoom()) continue
        t = this.keys.track(e.rule, e.key)
      }
      t.pending -= e.cost
    }
  }

  /**
   * This host's view of each entry's state (the fleet level at the last sync plus what this
   * host admitted since), as `consume` would find it at `nowMs`: the local bucket first gives
   * back the part of its refill owed to the other hosts, and a wait counts this host's share
   * of the refill. Nothing is admitted or charged beyond that.
   */
  peek(entries: readonly StateEntry[], nowMs: number): readonly AlgorithmResult[] {
    // What consume would find: the local bucket holds only this host's share of the refill.
    const tracked = entries.map((e) => this.sharedEntry(e, nowMs))
    return this.memory.peek(entries, nowMs).map((r, i) => {
      const t = tracked[i]
      if (!t || r.retryAfterMs <= 0) return r
      return { ...r, retryAfterMs: sharedRetryAfterMs(t, r.retryAfterMs, nowMs) }
    })
  }

  /**
   * Charge units into debt here and share them with the fleet at the next (early) sync, like
   * units this host admitted: every host sees the debt within a sync interval.
   * There is no `reset`: the fleet bucket in Redis takes every host's units, and forgetting
   * them on one host would only lend it room; `limiter.reset` and rules with a `ban` are
   * refused with this store (use RedisStore).
   */
  penalize(entries: readonly RefundEntry[], nowMs: number): void {
    // All or nothing: every entry is checked before any is charged.
    for (const e of entries)
      if (!isShareable(e.rule)) throw unsupported(e.rule.rule.id, e.rule.algorithm.name)
    for (const e of entries) {
      this.memory.charge(e.rule, e.key, e.cost, nowMs)
      const t = this.keys.track(e.rule, e.key)
      t.pending += e.cost
      this.markUrgent(t)
      t.fullAtMs = Math.max(t.fullAtMs, nowMs) + e.cost * interval(e.rule)
    }
  }

  /**
   * Record a limit function's answer in Redis, where every host's `limiter.get` and `penalty`
   * find it. Rejects when Redis fails or misses the deadline.
   */
  recordLimits(ruleStateId: string, limits: RuleTier): Promise<void> {
    return this.recorded.record(ruleStateId, limits)
  }

  /** The limit function answers every host recorded for the rule. */
  recordedLimits(ruleStateId: string): Promise<RuleTier[]> {
    return this.recorded.read(ruleStateId)
  }

  /**
   * Keep the state of these rules only. Units admitted under a removed rule that Redis has
   * not confirmed yet are still sent (other hosts may still enforce it, or it may come back).
   * Throws when a rule in force uses an algorithm this store cannot share, so
   * `createLimiter` refuses it at startup.
   */
  retain(stateIds: ReadonlySet<string>): void {
    checkShareable(stateIds)
    this.memory.retain(stateIds)
    this.keys.retain(stateIds)
  }

  /**
   * Run one sync round now (after the one in progress, if any): send what this host admitted,
   * take the fleet bucket's level. Never rejects: a failed round is logged and its units
   * are sent again by the next. The timer calls it every `syncMs`; tests call it directly.
   */
  syncNow(): Promise<void> {
    return this.queueRound(false)
  }

  /**
   * Stop the timer, send what is still unsent, and close what Floodgate opened. Units admitted
   * while it runs (requests still in flight during a shutdown) are sent too: it syncs until
   * Redis has confirmed every unit, or for at most twice `syncTimeoutMs` when Redis cannot be
   * reached, then closes the connection (dropped when Redis leaves QUIT unanswered for
   * `syncTimeoutMs`). Units it could not send, and units admitted after its last round (while
   * the connection closes), are logged in a warning; units admitted once it has resolved are
   * never sent.
   */
  close(): Promise<void> {
    if (this.closing) return this.closing
    this.closed = true
    this.recorded.close()
    if (this.timer) clearTimeout(this.timer)
    if (this.earlyTimer) clearTimeout(this.earlyTimer)
    this.closing = this.shutDown()
    return this.closing
  }

  private async shutDown(): Promise<void> {
    await this.drain()
    this.reportUnsent('closed before Redis confirmed every unit this host admitted')
    this.memory.close()
    this.keys.clear()
    await this.connection.close()
    this.reportUnsent('units admitted while the connection closed')
  }

  /** Sync until Redis has confirmed every unit admitted here, or the deadline passes. */
  private async drain(): Promise<void> {
    const deadline = Date.now() + 2 * this.timeoutMs
    for (;;) {
      // A key seen for the first time is read by one round and sent by the next.
      await this.syncNow()
      if (![...this.keys.all()].some(hasUnsent) || Date.now() >= deadline) return
      // Reconnecting, or a late reply still out: give it a moment before the next round.
      if (!this.exchange.connected || this.exchange.inFlight > 0) {
        await new Promise((resolve) => setTimeout(resolve, CLOSE_RETRY_MS))
      }
    }
  }

  /** Warn (never throttled) of the units Redis has not confirmed, if there are any. */
  private reportUnsent(why: string): void {
    const { unsent, unconfirmed } = this.keys.unsent()
    if (unsent === 0 && unconfirmed === 0) return
    this.log.warn(
      { unsent, unconfirmed, failedSyncs: this.failed },
      `synced store: ${why}; the fleet never counts the unsent units`,
    )
  }

  private queueRound(urgentOnly: boolean): Promise<void> {
    const next = this.round
      .then(() => this.runRound(urgentOnly))
      .catch((err: unknown) => {
        // A round must never break the chain: the next one runs whatever happened here.
        this.failed++
        this.report(err, 'synced store: sync failed; deciding locally, will catch up')
      })
    this.round = next
    return next
  }

  /** Sync this key in an early round, at most one per `syncMs / 10`. */
  private markUrgent(t: Tracked): void {
    if (!t.urgent) {
      t.urgent = true
      this.urgent.push(t)
    }
    if (this.earlyTimer || this.closed) return
    const gap = Math.max(1, this.syncMs / 10)
    const delay = Math.max(0, this.lastEarlyMs + gap - Date.now())
    this.earlyTimer = setTimeout(() => {
      this.earlyTimer = undefined
      this.lastEarlyMs = Date.now()
      void this.queueRound(true)
    }, delay)
    this.earlyTimer.unref()
  }

  /** Read a new key's fleet level soon: what the others admitted recently is in it. */
  private readSoon(t: Tracked): void {
    this.unread.push(t)
    if (!this.readScheduled) {
      this.readScheduled = true
      setImmediate(() => this.readBaselines())
    }
  }

  private readBaselines(): void {
    this.readScheduled = false
    const batch = this.unread.splice(0).filter((t) => !t.known && !t.reading)
    // Not connected: the next round reads them.
    if (batch.length === 0 || this.closed || !this.exchange.connected) return
    for (const t of batch) t.reading = true
    const now = this.clock()
    this.reads = Promise.all([
      this.reads,
      this.exchange
        .send(batch, (g, levels) => this.adopt(g, levels, now))
        .then((failure) => this.countFailure(failure))
        .catch((err: unknown) => this.report(err, 'synced store: reading a fleet counter failed'))
        .finally(() => {
          for (const t of batch) t.reading = false
        }),
    ]).then(() => undefined)
  }

  private schedule(): void {
    if (this.closed) return
    const delay = Math.max(1, Math.round(this.syncMs * (0.9 + 0.2 * Math.random())))
    this.timer = setTimeout(() => {
      void this.syncNow().then(() => this.schedule())
    }, delay)
    this.timer.unref()
  }

  private async runRound(urgentOnly: boolean): Promise<void> {
    // A round sends units only for keys whose baseline is known: let the reads land first.
    await this.reads
    if (this.keys.size === 0) return
    // A lazyConnect client nothing connected yet: a round is the store's first command.
    this.connection.connectIfLazy()
    const connected = this.exchange.connected
    if (urgentOnly && (!connected || this.exchange.lateCalls > 0)) {
      // The regular round will carry these keys; an early round never counts as failed.
      for (const t of this.urgent.splice(0)) t.urgent = false
      return
    }
    if (!connected) {
      this.failed++
      this.report(
        this.connection.unavailable(),
        'synced store: Redis not connected; deciding locally, will catch up',
      )
      return
    }
    if (this.exchange.lateCalls > 0) {
      // Calls are still unanswered past their deadline (a stalled link): send nothing more, so
      // an outage cannot pile up commands without bound. Their units go again once Redis
      // answers. (A read still within its deadline, of a key first seen while this round
      // waited for the reads, is no sign of one: counting it failed rounds on a healthy link.)
      this.failed++
      this.connection.missedDeadline(this.exchange.settledCalls)
      this.report(undefined, 'synced store: Redis has not answered the last sync; waiting')
      return
    }
    const now = this.clock()
    const seq = this.exchange.nextSeq()
    const batch: Tracked[] = []
    const candidates = urgentOnly ? this.urgent.splice(0) : this.keys.all()
    for (const t of candidates) {
      t.urgent = false
      if (t.reading) continue
      if (t.retired && !hasUnsent(t)) {
        // Its rule was removed and all its units are in Redis: nothing more to share.
        this.keys.untrack(t)
        continue
      }
      if (urgentOnly && this.keys.find(t.rule, t.key) !== t) continue
      if (t.known) {
        // A batch whose outcome is unknown goes again alone, so at most one is ever pending;
        // new units wait for the next round.
        if (t.unacked.length === 0 && t.pending !== 0) {
          t.unacked.push(seq, t.pending)
          t.pending = 0
        } else if (t.unacked.length === 0 && now - t.lastUseMs > idleMs(t.rule)) {
          // Not served here for a full refill: stop syncing it, but remember its share for a
          // while, so a burst after a pause is not met with a full bucket on every host.
          if (now - t.lastUseMs > rememberMs(t.rule, this.syncMs)) this.keys.untrack(t)
          continue
        }
      }
      batch.push(t)
    }
    if (batch.length === 0) return
    this.countFailure(await this.exchange.send(batch, (g, levels) => this.adopt(g, levels, now)))
  }

  private adopt(group: readonly Tracked[], levels: readonly FleetLevel[], now: number): void {
    group.forEach((t, i) => {
      const current = !t.retired && this.keys.find(t.rule, t.key) === t
      adoptFleetLevel(this.memory, t, levels[i]!, now, current)
    })
  }

  private countFailure(failure: unknown): void {
    if (failure === undefined) return
    this.failed++
    this.report(failure, 'synced store: sync failed; deciding locally, will catch up')
  }

  private report(err: unknown, msg: string): void {
    this.warn({ err, failedSyncs: this.failed }, msg)
  }
}

/**
 * Create a {@link SyncedStore}: local decisions at memory speed, consumption shared with the
 * fleet through Redis every `syncMs`.
 *
 * @param options - See {@link SyncedStoreOptions}; with none, connects to redis://127.0.0.1:6379.
 * @returns The store, ready to pass to `createLimiter({ store })`.
 * @example
 * ```ts
 * const store = createSyncedStore({ url: 'redis://127.0.0.1:6379', syncMs: 100 })
 * ```
 */
export function createSyncedStore(options: SyncedStoreOptions = {}): SyncedStore {
  return new SyncedStore(options)
}
