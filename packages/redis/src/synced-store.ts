import { randomBytes } from 'node:crypto'
import {
  EPSILON,
  algorithms,
  scopeLogger,
  type AlgorithmResult,
  type CompiledRule,
  type ConsumeEntry,
  type RefundEntry,
  type StateEntry,
} from '@floodgate/core/algorithms'
import { MemoryStore, OptionsError, type Logger, type Store } from '@floodgate/core'
import { RedisConnection, type RedisClient, type RedisConnectionOptions } from './connection.js'
import { checkPrefix, hashTag } from './redis-key.js'
import { scriptCommand } from './script-command.js'
import { throttledWarn } from './throttled-warn.js'
import { SYNC_SCRIPT } from './sync-script.js'

/** Options of {@link SyncedStore} and {@link createSyncedStore}. */
export interface SyncedStoreOptions extends RedisConnectionOptions {
  /**
   * Prefix of every key. Must not contain `{` or `}`. The fleet counters live at
   * `prefix:{tag}:stateId:synced`, apart from RedisStore's keys.
   * @default 'fg'
   */
  prefix?: string
  /**
   * How often this host pushes what it admitted and takes the fleet bucket's level, in
   * milliseconds (each interval jittered by ±10 %, so hosts do not sync in lockstep). A key
   * also syncs early, at most every `syncMs / 10`, when a burst starts or this host's share of
   * the fleet bucket runs out. Over-admission grows with it (docs/distributed.md).
   * @default 100
   */
  syncMs?: number
  /**
   * Deadline of one sync round in milliseconds. A round that misses it counts as failed: its
   * units are sent again with the next round, and Redis ignores the ones it already applied.
   * @default 1000
   */
  timeoutMs?: number
  /**
   * Hard cap on keys held locally (the local MemoryStore's `maxKeys`).
   * @default 1_000_000
   */
  maxKeys?: number
  /**
   * Clock for the units charged after a sync, in epoch milliseconds. Pass the limiter's
   * clock when tests drive time.
   * @default Date.now
   */
  clock?: () => number
  /** pino-compatible logger: a failed sync is logged at most once per 10 s. */
  logger?: Logger
}

/** One (rule, client key) whose consumption this host shares with the fleet. */
interface Tracked {
  readonly rule: CompiledRule
  readonly key: string
  readonly redisKey: string
  readonly tag: string
  /** Units admitted here and not yet sent. */
  pending: number
  /** Batches sent whose outcome is unknown, flat: seq, units, seq, units… */
  unacked: number[]
  /** The fleet bucket's level has been read at least once. */
  known: boolean
  /** A baseline read is in flight. */
  reading: boolean
  /** `nowMs` of the last local admission. */
  lastUseMs: number
  /** Part of the fleet bucket's room this host may spend alone: 1 / hosts sharing the key. */
  share: number
  /** Room left in the fleet bucket at the last sync, in units (negative: debt). */
  room: number
  /** When the local bucket is full again, as far as this host knows (its own units only). */
  fullAtMs: number
  /** Queued for the next early round. */
  urgent: boolean
  /** Until when the local refill was cut to this host's share. */
  adjustedMs: number
}

type SyncFn = (numKeys: number, ...args: (string | number)[]) => Promise<string[]>

/** Keys per script call on a single Redis: bounds how long one call holds Redis. */
const CHUNK = 256
/** A fleet counter outlives the last host that synced it by this much. */
const TTL_SLACK_MS = 60_000
/** Refunding this much empties any local bucket: the first step of setting its level. */
const RESET = Number.MAX_SAFE_INTEGER

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
  /** Resolves once the client is connected; never rejects. Until then decisions are local only. */
  readonly ready: Promise<void>
  private readonly connection: RedisConnection
  private readonly memory: MemoryStore
  private readonly prefix: string
  private readonly syncMs: number
  private readonly timeoutMs: number
  private readonly clock: () => number
  /** Redis trouble, at most one line per 10 s. */
  private readonly warn: ReturnType<typeof throttledWarn>
  private readonly isCluster: boolean
  /** Distinguishes this process's batches in Redis; a restarted host is a new one. */
  private readonly hostId = randomBytes(12).toString('base64url')
  /** stateId → client key → what is shared. Two levels, so the hot path builds no string. */
  private readonly tracked = new Map<string, Map<string, Tracked>>()
  private trackedCount = 0
  // One-entry cache of the last rule's map: most requests hit the same rule again.
  private lastRule: CompiledRule | undefined
  private lastKeys: Map<string, Tracked> | undefined
  private readonly unread: Tracked[] = []
  /** Keys an early round should sync: a burst began, or a share ran out. */
  private readonly urgent: Tracked[] = []
  private earlyTimer: NodeJS.Timeout | undefined
  private lastEarlyMs = Date.now()
  private readScheduled = false
  private seq = 0
  private round: Promise<void> = Promise.resolve()
  private reads: Promise<void> = Promise.resolve()
  private timer: NodeJS.Timeout | undefined
  private closed = false
  private script: SyncFn | undefined
  private failed = 0
  /** Script calls sent and not yet answered. */
  private inFlight = 0

  /**
   * @param options - Where Redis is and how often to sync; see {@link SyncedStoreOptions}.
   * @throws OptionsError when the options are inconsistent or out of range.
   */
  constructor(options: SyncedStoreOptions = {}) {
    const syncMs = options.syncMs ?? 100
    if (!Number.isInteger(syncMs) || syncMs < 1 || syncMs > 2 ** 31 - 1) {
      throw new OptionsError(
        `syncMs: expected an integer from 1 to ${2 ** 31 - 1}, got ${String(syncMs)}`,
      )
    }
    const timeoutMs = options.timeoutMs ?? 1000
    if (!Number.isInteger(timeoutMs) || timeoutMs < 1 || timeoutMs > 2 ** 31 - 1) {
      throw new OptionsError(
        `timeoutMs: expected an integer from 1 to ${2 ** 31 - 1}, got ${String(timeoutMs)}`,
      )
    }
    if (options.clock !== undefined && typeof options.clock !== 'function') {
      throw new OptionsError(`clock: expected a function, got ${typeof options.clock}`)
    }
    this.prefix = checkPrefix(options.prefix)
    this.memory = new MemoryStore({ maxKeys: options.maxKeys })
    this.connection = new RedisConnection(options, timeoutMs)
    this.client = this.connection.client
    this.ready = this.connection.ready
    this.syncMs = syncMs
    this.timeoutMs = timeoutMs
    this.clock = options.clock ?? Date.now
    this.warn = throttledWarn(scopeLogger(options.logger, 'floodgate-synced'))
    this.isCluster = this.connection.isCluster
    this.schedule()
  }

  /** Sync rounds that failed or missed their deadline (their units were kept for the next). */
  get failedSyncs(): number {
    return this.failed
  }

  /** Number of (rule, client key) pairs this host currently shares with the fleet. */
  get trackedKeys(): number {
    return this.trackedCount
  }

  /** Decide locally; the units admitted are shared with the fleet at the next sync. */
  consume(entries: readonly ConsumeEntry[], nowMs: number): readonly AlgorithmResult[] {
    for (const e of entries) {
      if (!e.rule.algorithm.charge) throw unsupported(e.rule)
      const t = this.find(e.rule, e.key)
      if (t?.known && t.share < 1) this.holdBack(t, nowMs)
    }
    const results = this.memory.consume(entries, nowMs)
    for (let i = 0; i < entries.length; i++) {
      if (!entries[i]!.shadow && !results[i]!.allowed) {
        // Refused while the fleet had room elsewhere: ask for a fresh share at once.
        for (const e of entries) {
          const t = this.find(e.rule, e.key)
          if (t && t.share < 1 && t.room > EPSILON) this.markUrgent(t)
        }
        return results // nothing was recorded
      }
    }
    for (let i = 0; i < entries.length; i++) {
      const e = entries[i]!
      if (e.shadow && !results[i]!.allowed) continue
      const t = this.track(e.rule, e.key)
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

  /** Give units back locally; the fleet learns at the next sync (others are not credited). */
  refund(entries: readonly RefundEntry[], nowMs: number): void {
    this.memory.refund(entries, nowMs)
    for (const e of entries) {
      const t = this.tracked.get(e.rule.stateId)?.get(e.key)
      if (t) t.pending -= e.cost
    }
  }

  /**
   * This host's view of each entry's state (the fleet level at the last sync plus what this
   * host admitted since), read without changing it.
   */
  peek(entries: readonly StateEntry[], nowMs: number): readonly AlgorithmResult[] {
    return this.memory.peek(entries, nowMs)
  }

  /**
   * Charge units into debt here and share them with the fleet at the next (early) sync, like
   * units this host admitted: every host sees the debt within a sync interval.
   * There is no `reset`: the fleet bucket in Redis takes every host's units, and forgetting
   * them on one host would only lend it room; `limiter.reset` and rules with a `ban` are
   * refused with this store (use RedisStore).
   */
  penalize(entries: readonly RefundEntry[], nowMs: number): void {
    for (const e of entries) {
      if (!e.rule.algorithm.charge) throw unsupported(e.rule)
      this.memory.charge(e.rule, e.key, e.cost, nowMs)
      const t = this.track(e.rule, e.key)
      t.pending += e.cost
      this.markUrgent(t)
      t.fullAtMs = Math.max(t.fullAtMs, nowMs) + e.cost * interval(e.rule)
    }
  }

  /**
   * Keep the state of these rules only. Throws when a rule in force uses an algorithm this
   * store cannot share, so `createLimiter` refuses it at startup.
   */
  retain(stateIds: ReadonlySet<string>): void {
    for (const id of stateIds) {
      // A stateId is `id|algorithm|limit|windowMs|burst` (core's stateIdOf).
      const [ruleId, name] = id.split('|')
      const algorithm =
        name !== undefined && Object.hasOwn(algorithms, name)
          ? algorithms[name as keyof typeof algorithms]
          : undefined
      if (algorithm && !algorithm.charge) {
        throw unsupported({ rule: { id: ruleId ?? id }, algorithm })
      }
    }
    this.memory.retain(stateIds)
    for (const [id, keys] of this.tracked) {
      if (stateIds.has(id)) continue
      this.trackedCount -= keys.size
      this.tracked.delete(id)
    }
    this.lastRule = undefined
    this.lastKeys = undefined
  }

  /**
   * Run one sync round now (after the one in progress, if any): send what this host admitted,
   * take the fleet bucket's level. Never rejects: a failed round is logged and its units
   * are sent again by the next. The timer calls it every `syncMs`; tests call it directly.
   */
  syncNow(): Promise<void> {
    return this.queueRound(false)
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

  /** Stop the timer, send what is still unsent (one last sync), and close what Floodgate opened. */
  async close(): Promise<void> {
    if (this.closed) return
    this.closed = true
    if (this.timer) clearTimeout(this.timer)
    if (this.earlyTimer) clearTimeout(this.earlyTimer)
    await this.syncNow()
    // Keys seen for the first time since the last round were only read by it: send their units.
    if ([...this.allTracked()].some((t) => t.pending !== 0)) await this.syncNow()
    this.memory.close()
    this.tracked.clear()
    this.trackedCount = 0
    this.lastRule = undefined
    this.lastKeys = undefined
    await this.connection.close()
  }

  /**
   * The local bucket refills at the rule's rate, but this host is owed only its share of the
   * fleet's refill: charge back the rest of what it refilled since the last adjustment. And a
   * local bucket that refilled to full while no sync said otherwise holds only its share of a
   * full fleet bucket, so that hosts that all meet a burst after a pause spend one bucket
   * between them, not one each.
   */
  private holdBack(t: Tracked, nowMs: number): void {
    const step = interval(t.rule)
    const refilled = Math.min(nowMs, t.fullAtMs) - t.adjustedMs
    t.adjustedMs = Math.max(t.adjustedMs, nowMs)
    if (nowMs >= t.fullAtMs) {
      const held = t.rule.params.burst * (1 - t.share)
      this.memory.charge(t.rule, t.key, held, nowMs)
      t.fullAtMs = nowMs + held * step
      this.markUrgent(t)
    } else if (refilled > 0 && t.room > 0) {
      const back = ((1 - t.share) * refilled) / step
      this.memory.charge(t.rule, t.key, back, nowMs)
      t.fullAtMs += back * step
    }
  }

  private find(rule: CompiledRule, key: string): Tracked | undefined {
    const keys = rule === this.lastRule ? this.lastKeys : this.tracked.get(rule.stateId)
    return keys?.get(key)
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

  private track(rule: CompiledRule, key: string): Tracked {
    let keys = this.lastKeys
    if (rule !== this.lastRule || !keys) {
      keys = this.tracked.get(rule.stateId)
      if (!keys) {
        keys = new Map()
        this.tracked.set(rule.stateId, keys)
      }
      this.lastRule = rule
      this.lastKeys = keys
    }
    let t = keys.get(key)
    if (t) return t
    const tag = hashTag(key)
    t = {
      rule,
      key,
      redisKey: `${this.prefix}:{${tag}}:${rule.stateId}:synced`,
      tag,
      pending: 0,
      unacked: [],
      known: false,
      reading: false,
      lastUseMs: Number.NEGATIVE_INFINITY,
      share: 1,
      room: rule.params.burst,
      fullAtMs: Number.NEGATIVE_INFINITY,
      urgent: false,
      adjustedMs: Number.NEGATIVE_INFINITY,
    }
    keys.set(key, t)
    this.trackedCount++
    // Read the fleet bucket's level now: what the others admitted recently is in it.
    this.unread.push(t)
    if (!this.readScheduled) {
      this.readScheduled = true
      setImmediate(() => this.readBaselines())
    }
    return t
  }

  private *allTracked(): Generator<Tracked> {
    for (const keys of this.tracked.values()) yield* keys.values()
  }

  private untrack(t: Tracked): void {
    const keys = this.tracked.get(t.rule.stateId)
    if (keys?.get(t.key) !== t) return
    keys.delete(t.key)
    this.trackedCount--
    if (keys.size === 0) {
      this.tracked.delete(t.rule.stateId)
      if (this.lastKeys === keys) this.lastKeys = undefined
    }
  }

  private readBaselines(): void {
    this.readScheduled = false
    const batch = this.unread.splice(0).filter((t) => !t.known && !t.reading)
    // Not connected: the next round reads them.
    if (batch.length === 0 || this.closed || !this.connected()) return
    for (const t of batch) t.reading = true
    this.reads = Promise.all([
      this.reads,
      this.send(batch, this.clock())
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
    if (this.trackedCount === 0) return
    if (urgentOnly && (!this.connected() || this.inFlight > 0)) {
      // The regular round will carry these keys; an early round never counts as failed.
      for (const t of this.urgent.splice(0)) t.urgent = false
      return
    }
    if (!this.connected()) {
      this.failed++
      this.report(undefined, 'synced store: Redis not connected; deciding locally, will catch up')
      return
    }
    if (this.inFlight > 0) {
      // The last round's calls are still unanswered (a stalled link): send nothing more, so an
      // outage cannot pile up commands without bound. Their units go again once Redis answers.
      this.failed++
      this.report(undefined, 'synced store: Redis has not answered the last sync; waiting')
      return
    }
    const now = this.clock()
    const seq = ++this.seq
    const batch: Tracked[] = []
    const candidates = urgentOnly ? this.urgent.splice(0) : this.allTracked()
    for (const t of candidates) {
      t.urgent = false
      if (t.reading) continue
      if (urgentOnly && this.find(t.rule, t.key) !== t) continue
      if (t.known) {
        // A batch whose outcome is unknown goes again alone, so at most one is ever pending;
        // new units wait for the next round.
        if (t.unacked.length === 0 && t.pending !== 0) {
          t.unacked.push(seq, t.pending)
          t.pending = 0
        } else if (t.unacked.length === 0 && now - t.lastUseMs > idleMs(t.rule)) {
          // Not served here for a full refill: stop syncing it, but remember its share for a
          // while, so a burst after a pause is not met with a full bucket on every host.
          if (now - t.lastUseMs > this.rememberMs(t.rule)) this.untrack(t)
          continue
        }
      }
      batch.push(t)
    }
    if (batch.length > 0) await this.send(batch, now)
  }

  /** One script call per chunk (per hash tag on a Cluster), all in flight together. */
  private async send(batch: Tracked[], now: number): Promise<void> {
    const groups: Tracked[][] = []
    if (this.isCluster) {
      const byTag = new Map<string, Tracked[]>()
      for (const t of batch) {
        const g = byTag.get(t.tag)
        if (g) g.push(t)
        else byTag.set(t.tag, [t])
      }
      groups.push(...byTag.values())
    } else {
      for (let i = 0; i < batch.length; i += CHUNK) groups.push(batch.slice(i, i + CHUNK))
    }
    let timer: NodeJS.Timeout | undefined
    let late = false
    const deadline = new Promise<void>((resolve) => {
      timer = setTimeout(() => {
        late = true
        resolve()
      }, this.timeoutMs)
    })
    let failure: unknown
    const calls = groups.map((g) => {
      this.inFlight++
      return this.call(g)
        .finally(() => this.inFlight--)
        .then(
          (totals) => {
            // A late reply is ignored: its batches stay unacked, and Redis skips them next time.
            if (!late) this.apply(g, totals, now)
          },
          (err: unknown) => {
            failure ??= err
          },
        )
    })
    await Promise.race([Promise.all(calls), deadline])
    clearTimeout(timer)
    if (late) failure ??= new Error(`no answer within ${this.timeoutMs} ms`)
    if (failure !== undefined) {
      this.failed++
      this.report(failure, 'synced store: sync failed; deciding locally, will catch up')
    }
  }

  private call(group: Tracked[]): Promise<string[]> {
    const args: (string | number)[] = group.map((t) => t.redisKey)
    args.push(this.hostId)
    const now = this.clock()
    for (const t of group) {
      const r = t.rule
      const n = t.unacked.length / 2
      const since = n > 0 && now > t.lastUseMs ? Math.min(now - t.lastUseMs, idleMs(r)) : 0
      args.push(ttlMs(r), interval(r), this.rememberMs(r), r.params.burst, since, n, ...t.unacked)
    }
    return this.syncScript()(group.length, ...args)
  }

  /**
   * Learn the fleet bucket's level: our batches are in it, and the local bucket becomes the
   * fleet's (or, while it has room, this host's share of the room) plus what this host
   * admitted since the call left. With one host sharing the key the local bucket is already
   * exact and is left alone.
   */
  private apply(group: Tracked[], reply: string[], now: number): void {
    group.forEach((t, i) => {
      t.unacked.length = 0
      t.known = true
      const burst = t.rule.params.burst
      const used = Number(reply[3 * i + 1])
      const hosts = Math.max(1, Number(reply[3 * i + 2]))
      t.room = burst - used
      t.share = 1 / hosts
      if (hosts === 1 || this.find(t.rule, t.key) !== t) return
      // At least one unit of the room, so a trickle spread over the hosts is not refused while
      // the fleet bucket still has room for it.
      const mine = t.room > 0 ? burst - Math.min(t.room, Math.max(t.room * t.share, 1)) : used
      const level = mine + t.pending
      this.memory.refund([{ rule: t.rule, key: t.key, cost: RESET }], now)
      if (level > EPSILON) this.memory.charge(t.rule, t.key, level, now)
      t.fullAtMs = now + Math.max(0, level) * interval(t.rule)
      t.adjustedMs = now
    })
  }

  /** How long a key served here stays remembered (not synced) after its last use. */
  private rememberMs(rule: CompiledRule): number {
    return Math.min(ttlMs(rule), Math.max(10 * idleMs(rule), 20 * this.syncMs))
  }

  private connected(): boolean {
    return this.connection.connected
  }

  private syncScript(): SyncFn {
    if (this.script) return this.script
    this.script = scriptCommand<SyncFn>(this.client, SYNC_SCRIPT)
    return this.script
  }

  private report(err: unknown, msg: string): void {
    this.warn({ err, failedSyncs: this.failed }, msg)
  }
}

/** Milliseconds for one unit to refill. */
function interval(rule: CompiledRule): number {
  return rule.params.windowMs / rule.params.limit
}

/** Time for a rule's state to refill from empty: how long a key stays shared after its last use here. */
function idleMs(rule: CompiledRule): number {
  return Math.ceil((rule.params.burst * rule.params.windowMs) / rule.params.limit)
}

function ttlMs(rule: CompiledRule): number {
  return idleMs(rule) + TTL_SLACK_MS
}

function unsupported(rule: { rule: { id: string }; algorithm: { name: string } }): OptionsError {
  return new OptionsError(
    `SyncedStore: rule ${rule.rule.id} uses ${rule.algorithm.name}, which cannot carry the debt a sync charges; use token-bucket or gcra, or a RedisStore for this rule`,
  )
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
