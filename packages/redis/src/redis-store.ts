import { FloodgateError, type Store } from '@floodgate/core'
import type { RuleTier } from '@floodgate/core/rules'
import {
  checkPositiveInt,
  checkPositiveNumber,
  optionError,
  renamedOption,
} from '@floodgate/core/options'
import {
  checkChargeable,
  scopeLogger,
  type AlgorithmResult,
  type ConsumeEntry,
  type RefundEntry,
  type StateEntry,
} from '@floodgate/core/algorithms'
import { BatchQueue, type ScriptCall } from './batch-queue.js'
import { RedisConnection, warnUnsafeClient, type RedisClient } from './connection.js'
import { OwedReleases } from './owed-releases.js'
import { RecordedLimits } from './recorded-limits.js'
import { checkPrefix, hashTag } from './redis-key.js'
import { isTryAgain, tailedScript, type TailedScript } from './script-frame.js'
import { throttledWarn } from './throttled-warn.js'
import type { RedisStoreOptions, TimeSource } from './redis-store-options.js'
import { decideScript, loneScript } from './scripts/decide-script.js'
import { isWellFormedReply, type WireEntry, type WireMode } from './wire-format.js'

export type { RedisStoreOptions, TimeSource } from './redis-store-options.js'

/** How many units past the deadline a test-driven clock may run while keys must survive. */
export const CALLER_CLOCK_TTL_SLACK_MS = 60_000

/**
 * A Store that keeps every rule's state in Redis, so a fleet of hosts shares one limit.
 *
 * One Lua script decides all of a request's rules at once (all-or-nothing, mirroring core's
 * algorithms exactly) with Redis `TIME` as the clock; requests started in the same turn of the
 * event loop share one EVALSHA, up to 16 per call, each decided as if it were alone. Keys
 * are `prefix:{tag}:stateId` with a brace-free tag hashed from the client key, so all rules
 * of one client share a Redis Cluster slot. Every call is bounded by `callTimeoutMs`.
 *
 * @example
 * ```ts
 * import { createLimiter } from '@floodgate/core'
 * import { createRedisStore } from '@floodgate/redis'
 *
 * const store = createRedisStore({ url: process.env.REDIS_URL, callTimeoutMs: 50 })
 * const limiter = createLimiter({ rules, store })
 * ```
 */
export class RedisStore implements Store {
  /** The ioredis client in use. */
  readonly client: RedisClient
  /**
   * Resolves once the client is connected (at once if it already is), or once the client has
   * ended without connecting (the store was closed first); never rejects. Calls
   * made before fail at once (no offline queue), so the limiter fails open until then:
   * await it at startup when the first requests must already be limited. Reading it connects
   * a `lazyConnect` client that nothing connected yet.
   */
  get ready(): Promise<void> {
    this.connection.connectIfLazy()
    return this.connection.ready
  }
  private readonly connection: RedisConnection
  private readonly timeoutMs: number
  private readonly fallback: Store | undefined
  private readonly clock: TimeSource
  private readonly leaseMs: number
  /** Redis trouble, at most one line per 10 s. */
  private readonly warn: ReturnType<typeof throttledWarn>
  /** Script callers by algorithm set ('token-bucket', 'fixed-window,token-bucket', …). */
  private readonly scripts = new Map<string, TailedScript>()
  /** The lone scripts' callers, by algorithm (see {@link loneScript}). */
  private readonly loneScripts = new Map<string, TailedScript>()
  /** The ARGV before the packed batch when Redis is the clock (see `wire-format.ts`). */
  private readonly redisClockArgv: readonly string[]
  private readonly isCluster: boolean
  private readonly queue: BatchQueue
  private readonly recorded: RecordedLimits
  /** Concurrency slots whose taking or release a dropped connection cut off. */
  private readonly owed: OwedReleases
  /**
   * The name of the next concurrency slot this store takes: counted up from a random start,
   * so the names of a fleet's hosts do not meet (see `scripts/concurrency.ts`).
   */
  private nextLease = 1 + Math.floor(Math.random() * 2 ** 52)

  /**
   * @param options - Where Redis is and how calls are bounded; see {@link RedisStoreOptions}.
   * @throws OptionsError when the options are inconsistent or out of range.
   */
  constructor(options: RedisStoreOptions) {
    const log = options.logger
    const deadline = renamedOption(options, 'timeoutMs', 'callTimeoutMs', 'RedisStore', log)
    const timeoutMs = checkPositiveNumber(deadline.name, deadline.value, 50)
    const prefix = checkPrefix(options.prefix)
    const maxPending = checkPositiveInt('maxPending', options.maxPending, 1000)
    const leaseMs = checkPositiveInt('concurrencyLeaseMs', options.concurrencyLeaseMs, 60_000)
    const source = renamedOption(options, 'clock', 'timeSource', 'RedisStore', log)
    const clock = (source.value ?? 'redis') as TimeSource
    if (clock !== 'redis' && clock !== 'caller' && typeof clock !== 'function') {
      throw optionError(source.name, "'redis', 'caller' or a function", clock)
    }

    this.timeoutMs = timeoutMs
    this.fallback = options.fallback
    this.clock = clock
    this.leaseMs = leaseMs
    this.redisClockArgv = ['', '0', String(leaseMs)]
    this.warn = throttledWarn(scopeLogger(options.logger, 'floodgate-redis'))
    this.connection = new RedisConnection(
      options,
      timeoutMs,
      options.logger && scopeLogger(options.logger, 'floodgate-redis'),
    )
    if (options.client) warnUnsafeClient(options.client, options.logger, 'floodgate-redis')
    this.client = this.connection.client
    this.isCluster = this.connection.isCluster
    this.recorded = new RecordedLimits(this.client, prefix, timeoutMs, this.warn)
    this.owed = new OwedReleases(
      leaseMs,
      () => this.connection.connected,
      (entry, now) => this.releaseRedis([entry], now),
    )
    this.queue = new BatchQueue({
      prefix,
      timeoutMs,
      maxPending,
      isCluster: this.isCluster,
      call: (call) => this.call(call),
      onFailure: () => this.connection.refreshTopology(),
      onDeadline: () => this.connection.missedDeadline(this.queue.settledCalls),
      onLateAnswer: (mode, entries, results, now) =>
        this.undoLateAnswer(mode, entries, results, now),
    })
  }

  /**
   * Every call settles within `callTimeoutMs` (a fallback that answers synchronously adds
   * nothing), so the limiter need not arm a timer of its own.
   */
  get settlesWithinMs(): number | undefined {
    return this.fallback && this.fallback.synchronous !== true ? undefined : this.timeoutMs
  }

  /** Decide every entry of a request in one script call (one per hash tag on a Cluster). */
  consume(entries: readonly ConsumeEntry[], nowMs: number): Promise<readonly AlgorithmResult[]> {
    if (entries.length === 0) return Promise.resolve([])
    const named = this.nameSlots(entries)
    const result = this.consumeRedis(named ?? entries, nowMs)
    if (!named) return this.orFallback(result, entries, nowMs)
    return this.orFallback(
      result.then((results) => {
        named.forEach((e, i) => {
          const r = results[i]
          if (e.lease !== undefined && r?.allowed === true) r.lease = e.lease
        })
        return results
      }),
      entries,
      nowMs,
    )
  }

  /**
   * Copies of the concurrency entries, each naming the slot it takes, so that its release
   * frees that slot only; undefined when the request holds no slot.
   */
  private nameSlots(entries: readonly ConsumeEntry[]): WireEntry[] | undefined {
    let named: WireEntry[] | undefined
    for (let i = 0; i < entries.length; i++) {
      const e = entries[i]!
      if (e.rule.algorithm.name !== 'concurrency') continue
      named ??= entries.slice()
      named[i] = { ...e, lease: this.nextLease++ }
    }
    return named
  }

  private consumeRedis(
    entries: readonly ConsumeEntry[],
    nowMs: number,
  ): Promise<readonly AlgorithmResult[]> {
    const now = this.now(nowMs)
    if (!this.isCluster) return this.queue.enqueue('c', now, entries)
    const startedMs = performance.now()
    const groups = groupByTag(entries)
    return groups.length === 1
      ? this.consumeSlot(entries, now, startedMs)
      : this.consumeSplit(entries, groups, now, startedMs)
  }

  /**
   * Decide entries of one hash tag in one call. While their slot is being migrated, Redis
   * refuses a call of several keys it does not hold all of (`TRYAGAIN`: a client with a state
   * for one rule and none yet for another, a new client, keys half moved), for as long as the
   * migration lasts; the call did not run. The entries are then decided one key per call, as
   * a request spanning slots is (see {@link consumeSplit}), within what is left of the deadline.
   */
  private consumeSlot(
    entries: readonly ConsumeEntry[],
    now: string,
    startedMs: number,
  ): Promise<readonly AlgorithmResult[]> {
    return this.queue.enqueue('c', now, entries).catch((err: unknown) => {
      if (!isTryAgain(err)) throw err
      return this.inTime(
        startedMs,
        () => this.consumeSplit(entries, groupByKey(entries), now, startedMs, true),
        (results) => this.undoLateAnswer('c', entries, results, now),
      )
    })
  }

  /**
   * Run `work` if time is left of the deadline that started at `startedMs`, and fail once it
   * is over: what it answers after that goes to `late`.
   */
  private inTime<T>(
    startedMs: number,
    work: () => Promise<T>,
    late?: (value: T) => void,
  ): Promise<T> {
    const leftMs = startedMs + this.timeoutMs - performance.now()
    const missed = (): FloodgateError =>
      new FloodgateError(
        'FG_ERR_STORE_TIMEOUT',
        `redis store: no answer within ${this.timeoutMs} ms`,
      )
    if (leftMs <= 0) return Promise.reject(missed())
    return new Promise<T>((resolve, reject) => {
      let over = false
      const timer = setTimeout(() => {
        over = true
        reject(missed())
      }, leftMs)
      work().then(
        (value) => {
          clearTimeout(timer)
          if (!over) resolve(value)
          else late?.(value)
        },
        (err: unknown) => {
          clearTimeout(timer)
          if (!over) reject(err instanceof Error ? err : new Error(String(err)))
        },
      )
    })
  }

  /**
   * Queue a request of one hash tag whose entries are each decided on their own (a refund,
   * peek, reset or penalty); refused with `TRYAGAIN` (see {@link consumeSlot}), one call per
   * key instead, within the deadline.
   */
  private eachInSlot(
    mode: WireMode,
    now: string,
    list: readonly WireEntry[],
    startedMs: number,
  ): Promise<AlgorithmResult[]> {
    return this.queue.enqueue(mode, now, list).catch((err: unknown) => {
      if (!this.isCluster || !isTryAgain(err)) throw err
      return this.inTime(startedMs, () =>
        inGroups(list, groupByKey(list), (part) => this.queue.enqueue(mode, now, part, true)),
      )
    })
  }

  private orFallback(
    result: Promise<readonly AlgorithmResult[]>,
    entries: readonly ConsumeEntry[],
    nowMs: number,
  ): Promise<readonly AlgorithmResult[]> {
    if (!this.fallback) return result
    const fallback = this.fallback
    return result.catch((err: unknown) => {
      this.report(err, 'redis store failed; the fallback store decides')
      return fallback.consume(entries, nowMs)
    })
  }

  /** Give units back (a released concurrency slot, an abandoned reservation). Never rejects. */
  async refund(entries: readonly RefundEntry[], nowMs: number): Promise<void> {
    if (entries.length === 0) return
    if (!this.fallback) return this.refundRedis(entries, this.now(nowMs))
    // A slot goes back to the store that gave it: Redis names every slot it gives, the
    // fallback none. Sent to both, the release of a slot the fallback gave would also free the
    // oldest slot in Redis, one a request still running holds.
    const isSlot = (e: RefundEntry): boolean => e.rule.algorithm.name === 'concurrency'
    const redis = entries.filter((e) => !isSlot(e) || e.lease !== undefined)
    if (redis.length > 0) await this.refundRedis(redis, this.now(nowMs))
    // Rate units may have been charged there while Redis was failing; a refund of units that
    // were never charged leaves a fresh state fresh.
    const local = entries.filter((e) => !isSlot(e) || e.lease === undefined)
    if (local.length > 0) await this.fallback.refund(local, nowMs)
  }

  private async refundRedis(entries: readonly RefundEntry[], now: string): Promise<void> {
    try {
      await this.releaseRedis(entries, now)
    } catch (err) {
      // The units stay charged until the state's TTL: stricter for a while, never looser. A
      // named concurrency slot is released again once Redis answers (see OwedReleases).
      this.report(err, 'redis store refund failed')
    }
  }

  /** Give units back in Redis; rejects when Redis fails or misses the deadline. */
  private async releaseRedis(entries: readonly RefundEntry[], now: string): Promise<void> {
    const list = entries.map((e) => ({ ...e, maxWaitMs: 0, shadow: false }))
    if (!this.isCluster) await this.queue.enqueue('r', now, list)
    else {
      const startedMs = performance.now()
      await Promise.all(
        groupByTag(list).map((g) =>
          this.eachInSlot(
            'r',
            now,
            g.map((i) => list[i]!),
            startedMs,
          ),
        ),
      )
    }
  }

  /**
   * Read each entry's state without changing it (one script call, nothing written). Rejects
   * when Redis fails or misses the deadline.
   */
  async peek(entries: readonly StateEntry[], nowMs: number): Promise<readonly AlgorithmResult[]> {
    return this.each('p', entries, 0, nowMs)
  }

  /**
   * Delete each entry's state in Redis (and in the fallback store): every host sharing this
   * Redis sees the client afresh. Rejects when Redis fails or misses the deadline.
   */
  async reset(entries: readonly StateEntry[], nowMs: number): Promise<void> {
    await this.each('x', entries, 0, nowMs)
    await this.fallback?.reset?.(entries, nowMs)
  }

  /**
   * Charge each entry's units unconditionally, into debt (token bucket and GCRA only), in
   * Redis: every host sharing it sees the debt. Rejects when Redis fails or misses the deadline.
   * @throws OptionsError for a rule whose algorithm cannot carry debt; nothing is charged then.
   */
  async penalize(entries: readonly RefundEntry[], nowMs: number): Promise<void> {
    checkChargeable(entries)
    await this.each('f', entries, undefined, nowMs)
  }

  /**
   * Record a limit function's answer in Redis (`prefix:limits:stateId`), where every host's
   * `limiter.reset` and `get` find it. Rejects when Redis fails or misses the deadline.
   */
  recordLimits(ruleStateId: string, limits: RuleTier): Promise<void> {
    return this.recorded.record(ruleStateId, limits)
  }

  /** The limit function answers every host recorded for the rule. */
  recordedLimits(ruleStateId: string): Promise<RuleTier[]> {
    return this.recorded.read(ruleStateId)
  }

  /**
   * One request per hash tag (one per call on a single Redis) of entries that are decided
   * each on its own; `cost` replaces the entries' own when given.
   */
  private async each(
    mode: 'p' | 'x' | 'f',
    entries: readonly (StateEntry & { cost?: number })[],
    cost: number | undefined,
    nowMs: number,
  ): Promise<AlgorithmResult[]> {
    if (entries.length === 0) return []
    const now = this.now(nowMs)
    const list: WireEntry[] = entries.map((e) => ({
      rule: e.rule,
      key: e.key,
      cost: cost ?? e.cost ?? 0,
      maxWaitMs: 0,
      shadow: false,
    }))
    if (!this.isCluster) return this.queue.enqueue(mode, now, list)
    const startedMs = performance.now()
    return inGroups(list, groupByTag(list), (part) => this.eachInSlot(mode, now, part, startedMs))
  }

  /**
   * Close the client when Floodgate created it; a client passed in stays open. Resolves
   * within about `callTimeoutMs` even when Redis does not answer (the connection is dropped).
   */
  async close(): Promise<void> {
    this.recorded.close()
    this.owed.close()
    await this.fallback?.close?.()
    await this.connection.close()
  }

  private now(nowMs: number): string {
    if (this.clock === 'redis') return ''
    return String(this.clock === 'caller' ? nowMs : this.clock())
  }

  /**
   * A Cluster request whose entries have different client keys spans several slots, which no
   * single script can touch. Each slot decides its own entries atomically, in parallel; when
   * one slot refuses, the units the other slots recorded are refunded. Between the two calls
   * another request may find those units taken: stricter for a moment, never over-admitting.
   * When one slot's call fails, the request passes unjudged and nobody would release what the
   * others recorded: the concurrency slots they took are given back (rate units stay charged,
   * as for a late answer: the request did pass).
   */
  private async consumeSplit(
    entries: readonly ConsumeEntry[],
    groups: number[][],
    now: string,
    startedMs: number,
    oneKey = false,
  ): Promise<readonly AlgorithmResult[]> {
    const settled = await Promise.allSettled(
      groups.map((g) => {
        const part = g.map((i) => entries[i]!)
        return oneKey
          ? this.queue.enqueue('c', now, part, true)
          : this.consumeSlot(part, now, startedMs)
      }),
    )
    // Each entry's result, where its slot's call answered.
    const results: (AlgorithmResult | undefined)[] = new Array<AlgorithmResult>(entries.length)
    let failure: PromiseRejectedResult | undefined
    let allowed = true
    groups.forEach((g, gi) => {
      const part = settled[gi]!
      if (part.status === 'rejected') return void (failure ??= part)
      g.forEach((entryIndex, k) => {
        const r = part.value[k]!
        results[entryIndex] = r
        if (!entries[entryIndex]!.shadow && !r.allowed) allowed = false
      })
    })
    if (failure === undefined && allowed) return results as AlgorithmResult[]
    const undo: RefundEntry[] = []
    groups.forEach((g) => {
      // A group recorded only if its call answered and none of its non-shadow entries refused.
      const recorded = g.every((i) => results[i] && (entries[i]!.shadow || results[i].allowed))
      if (!recorded) return
      for (const i of g) {
        if (!results[i]!.allowed) continue
        if (failure === undefined || entries[i]!.rule.algorithm.name === 'concurrency') {
          undo.push(entries[i]!)
        }
      }
    })
    if (failure !== undefined) {
      if (undo.length > 0) void this.refundRedis(undo, now)
      throw failure.reason
    }
    if (undo.length > 0) await this.refundRedis(undo, now)
    return results as AlgorithmResult[]
  }

  /** Run one batch's script: its keys, then the ARGV `wire-format.ts` lays out. */
  private call(call: ScriptCall): Promise<unknown> {
    const requests = call.packed.requests
    if (!OwedReleases.touchesSlots(requests)) return this.send(call)
    // Whether the script can reach Redis: one that cannot took no slot.
    const sent = this.connection.connected
    let reply: Promise<unknown>
    try {
      reply = this.send(call)
    } catch (err) {
      reply = Promise.reject(err instanceof Error ? err : new Error(String(err)))
    }
    reply.then(
      // A reply of the wrong type or shape came from a script that may have run and taken
      // its slots, for requests that then pass unjudged: nobody would release them.
      (r) => {
        if (!isWellFormedReply(r, call.keys.length)) this.owed.owe(requests, true, call.now)
      },
      // Refused with TRYAGAIN, the script did not run: it took no slot, and the store takes
      // it again, by the same name, one key per call (see consumeSlot).
      (err: unknown) => this.owed.owe(requests, sent && !isTryAgain(err), call.now),
    )
    return reply
  }

  private send(call: ScriptCall): Promise<unknown> {
    const down = this.connection.unavailable()
    if (down) return Promise.reject(down)
    const argv =
      call.now === ''
        ? this.redisClockArgv
        : [call.now, String(CALLER_CLOCK_TTL_SLACK_MS), String(this.leaseMs)]
    return this.script(call)(call.keys, argv, call.packed)
  }

  /**
   * The script of a call, defined on first use: the lone script of its algorithm for one
   * request that consumes one entry, else the decide script of its algorithm set (see
   * {@link ScriptCall.id}).
   */
  private script(call: ScriptCall): TailedScript {
    const scripts = call.lone ? this.loneScripts : this.scripts
    let fn = scripts.get(call.id)
    if (fn) return fn
    const algorithms = call.packed.algorithms
    fn = tailedScript(
      this.client,
      call.lone ? loneScript(algorithms[0]!) : decideScript(algorithms),
    )
    scripts.set(call.id, fn)
    return fn
  }

  /**
   * Redis ran a script after the caller gave up on it (the request passed unjudged): give back
   * the concurrency slots it took, or they would stay taken until their lease expires. Rate
   * units stay charged: the request did pass, and charging it once is right.
   */
  private undoLateAnswer(
    mode: WireMode,
    entries: readonly WireEntry[],
    results: readonly AlgorithmResult[],
    now: string,
  ): void {
    // A garbled answer (no results for these entries) says nothing of what was recorded.
    if (mode !== 'c' || results.length !== entries.length) return
    const recorded = entries.every((e, i) => e.shadow || results[i]!.allowed)
    if (!recorded) return
    const slots = entries.filter(
      (e, i) => e.rule.algorithm.name === 'concurrency' && results[i]!.allowed,
    )
    if (slots.length > 0) void this.refundRedis(slots, now)
  }

  private report(err: unknown, msg: string): void {
    this.warn({ err }, msg)
  }
}

/** Entry indices grouped by `keyOf`, in first-seen order. */
function groupIndices<T>(entries: readonly T[], keyOf: (e: T) => string): number[][] {
  const groups = new Map<string, number[]>()
  entries.forEach((e, i) => {
    const k = keyOf(e)
    const g = groups.get(k)
    if (g) g.push(i)
    else groups.set(k, [i])
  })
  return [...groups.values()]
}

/** Entry indices grouped by Redis key (a state id under a hash tag), in first-seen order. */
function groupByKey(entries: readonly { key: string; rule: { stateId: string } }[]): number[][] {
  return groupIndices(entries, (e) => `${hashTag(e.key)}:${e.rule.stateId}`)
}

/** Entry indices grouped by hash tag, in first-seen order. */
function groupByTag(entries: readonly { key: string }[]): number[][] {
  return groupIndices(entries, (e) => hashTag(e.key))
}

/**
 * Run each group of `list` (indices, see {@link groupIndices}) and put the results back in the
 * order of `list`.
 */
async function inGroups<T>(
  list: readonly T[],
  groups: readonly number[][],
  run: (part: T[]) => Promise<readonly AlgorithmResult[]>,
): Promise<AlgorithmResult[]> {
  const parts = await Promise.all(groups.map((g) => run(g.map((i) => list[i]!))))
  const out: AlgorithmResult[] = new Array<AlgorithmResult>(list.length)
  groups.forEach((g, gi) => g.forEach((i, k) => (out[i] = parts[gi]![k]!)))
  return out
}

/**
 * Create a {@link RedisStore}. With `url` or `cluster`, Floodgate creates the ioredis client
 * with limiter-safe settings (no offline queue, no retries or resends of a script whose
 * outcome is unknown, a command timeout of `callTimeoutMs`) and closes it on `close()`.
 *
 * @param options - See {@link RedisStoreOptions}; with none, connects to redis://127.0.0.1:6379.
 * @returns The store, ready to pass to `createLimiter({ store })`.
 * @example
 * ```ts
 * const store = createRedisStore({ url: 'redis://127.0.0.1:6379', fallback: new MemoryStore() })
 * const cluster = createRedisStore({ cluster: [{ host: '10.0.0.1', port: 7000 }] })
 * ```
 */
export function createRedisStore(options: RedisStoreOptions = {}): RedisStore {
  return new RedisStore(options)
}
