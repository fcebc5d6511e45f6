import { Cluster, Redis, type ClusterNode, type ClusterOptions, type RedisOptions } from 'ioredis'
import {
  FloodgateError,
  type AlgorithmName,
  OptionsError,
  scopeLogger,
  type AlgorithmResult,
  type ConsumeEntry,
  type Logger,
  type RefundEntry,
  type Store,
} from '@floodgate/core'
import { hashTag, redisKey } from './redis-key.js'
import { scriptCommand } from './script-command.js'
import { throttledWarn } from './throttled-warn.js'
import {
  ENTRY_BYTES,
  REQUEST_HEADER_BYTES,
  RESULT_FIELDS,
  decideScript,
  scriptAlgorithms,
} from './scripts/decide-script.js'

/** A client Floodgate can run its script on: a single Redis or a Redis Cluster. */
export type RedisClient = Redis | Cluster

/** Where Redis is: one of `client`, `url` or `cluster` (none: redis://127.0.0.1:6379). */
export interface RedisConnectionOptions {
  /**
   * A client the application already has. Floodgate does not change its settings, so set
   * the ones that matter for a limiter yourself (see docs/distributed.md):
   * `enableOfflineQueue: false`, `maxRetriesPerRequest: 0`, `commandTimeout`,
   * `autoResendUnfulfilledCommands: false` (and `retryDelayOnFailover: 0` on a Cluster).
   * Floodgate never closes a client it did not create.
   */
  client?: RedisClient
  /** A Redis URL (`redis://host:6379/0`, `rediss://…`); Floodgate creates and owns the client. */
  url?: string
  /** Seed nodes of a Redis Cluster; Floodgate creates and owns a `Redis.Cluster`. */
  cluster?: ClusterNode[]
  /** Extra ioredis options for a client Floodgate creates (the limiter-safe ones win). */
  redisOptions?: RedisOptions
  /** Extra ioredis Cluster options for a cluster Floodgate creates. */
  clusterOptions?: ClusterOptions
}

/** Options of {@link RedisStore} and {@link createRedisStore}. */
export interface RedisStoreOptions extends RedisConnectionOptions {
  /**
   * Prefix of every key. Must not contain `{` or `}`.
   * @default 'fg'
   */
  prefix?: string
  /**
   * Deadline of every call in milliseconds. Past it the call rejects (the limiter fails
   * open) or, with `fallback`, the fallback decides.
   * @default 50
   */
  timeoutMs?: number
  /**
   * A store asked when Redis fails or misses the deadline, typically a MemoryStore. Its
   * answers are per host (a fleet of N hosts admits up to N × limit while Redis is down).
   */
  fallback?: Store
  /**
   * Where the time comes from. `'redis'` (production): `TIME` inside the script, so app
   * hosts with skewed clocks agree. `'caller'` uses the `nowMs` passed to `consume`, and a
   * function is called for every decision: both exist for tests that drive time themselves.
   * @default 'redis'
   */
  clock?: 'redis' | 'caller' | (() => number)
  /**
   * Most calls awaiting Redis at once. Past it, calls fail at once instead of queueing
   * behind a stalled Redis, so an outage cannot pile up pending promises.
   * @default 1000
   */
  maxPending?: number
  /**
   * How long a concurrency slot may be held before it is presumed lost (a host that crashed
   * mid-request never releases it). Set it above your slowest request: a lease that expires
   * while its request still runs frees the slot early.
   * @default 60000
   */
  concurrencyLeaseMs?: number
  /** pino-compatible logger for fallback notices. */
  logger?: Logger
}

/** ioredis settings a limiter needs, applied to every client Floodgate creates. */
function limiterRedisOptions(timeoutMs: number): RedisOptions {
  return {
    // A dead Redis must fail a call now, not park it in a queue for later.
    enableOfflineQueue: false,
    // Reject pending commands on the first reconnect attempt instead of retrying them 20 times.
    maxRetriesPerRequest: 0,
    // A script whose reply was lost may have run: resending it would count a decision twice.
    autoResendUnfulfilledCommands: false,
    // No commandTimeout: the store enforces `timeoutMs` itself, bounds what waits with
    // `maxPending`, and needs the late replies (to free concurrency slots); a per-command
    // timer in ioredis too would only double the timer work of every call.
    // Not enableAutoPipelining: in ioredis 5.11 a script in an auto-pipeline can throw an
    // uncaught "results[i] is not iterable" from autoPipelining.js (seen in our fleet test).
    connectTimeout: Math.max(1000, timeoutMs),
    // Keep trying to come back, quickly but without hammering a restarting Redis.
    retryStrategy: (times: number) => Math.min(50 * times, 1000),
  }
}

type DecideFn = (numKeys: number, ...args: (string | number | Buffer)[]) => Promise<number[]>

/** How many units past the deadline a test-driven clock may run while keys must survive. */
const CALLER_CLOCK_TTL_SLACK_MS = 60_000
/**
 * Most requests decided by one script call. A batch is answered only once Redis has run all
 * of it, so one huge batch would make Node and Redis take turns; several medium ones keep
 * both busy. Measured with `bench/redis` (see docs/benchmarks.md).
 */
const BATCH_REQUESTS = 16

type BatchEntry = ConsumeEntry | (RefundEntry & { maxWaitMs: number; shadow: boolean })

/** One request waiting in a batch. */
interface BatchedRequest {
  mode: 'c' | 'r'
  entries: readonly BatchEntry[]
  resolve: (results: AlgorithmResult[]) => void
  reject: (err: Error) => void
}

/** Requests that go to Redis together in one script call. */
interface Batch {
  key: string
  /** The script's algorithm set. */
  id: string
  now: string
  /** The script's algorithms, in the order of the indexes the packed entries carry. */
  algorithms: readonly AlgorithmName[]
  requests: BatchedRequest[]
  keys: string[]
  /** Each request's packed header and entries (see the script's `ARGV_COUNT`). */
  packed: Buffer[]
  sent: boolean
  timedOut: boolean
  /** `performance.now()` past which the batch is not sent. */
  deadline: number
  timer: ReturnType<typeof setTimeout>
}

/**
 * A Store that keeps every rule's state in Redis, so a fleet of hosts shares one limit.
 *
 * One Lua script decides all of a request's rules at once (all-or-nothing, mirroring core's
 * algorithms exactly) with Redis `TIME` as the clock; requests started in the same turn of the
 * event loop share one EVALSHA, up to 16 per call, each decided as if it were alone. Keys
 * are `prefix:{tag}:stateId` with a brace-free tag hashed from the client key, so all rules
 * of one client share a Redis Cluster slot. Every call is bounded by `timeoutMs`.
 *
 * @example
 * ```ts
 * import { createLimiter } from '@floodgate/core'
 * import { createRedisStore } from '@floodgate/redis'
 *
 * const store = createRedisStore({ url: process.env.REDIS_URL, timeoutMs: 50 })
 * const limiter = createLimiter({ rules, store })
 * ```
 */
export class RedisStore implements Store {
  /** The ioredis client in use. */
  readonly client: RedisClient
  /**
   * Resolves once the client is connected (at once if it already is); never rejects. Calls
   * made before fail at once (no offline queue), so the limiter fails open until then:
   * await it at startup when the first requests must already be limited.
   */
  readonly ready: Promise<void>
  private readonly owned: boolean
  private readonly prefix: string
  private readonly timeoutMs: number
  private readonly fallback: Store | undefined
  private readonly clock: 'redis' | 'caller' | (() => number)
  private readonly maxPending: number
  private readonly leaseMs: number
  /** Redis trouble, at most one line per 10 s. */
  private readonly warn: ReturnType<typeof throttledWarn>
  /** Script callers by algorithm set ('token-bucket', 'fixed-window,token-bucket', …). */
  private readonly scripts: Map<string, DecideFn>
  private readonly isCluster: boolean
  private pending = 0
  private lastRefreshMs = 0
  /** Batches still taking requests, by script, `now` and (on a Cluster) hash tag. */
  private readonly open = new Map<string, Batch>()
  private flushScheduled = false

  /**
   * @param options - Where Redis is and how calls are bounded; see {@link RedisStoreOptions}.
   * @throws OptionsError when the options are inconsistent or out of range.
   */
  constructor(options: RedisStoreOptions) {
    const timeoutMs = options.timeoutMs ?? 50
    if (!Number.isFinite(timeoutMs) || timeoutMs <= 0) {
      throw new OptionsError(`timeoutMs: expected a positive number, got ${String(timeoutMs)}`)
    }
    const prefix = options.prefix ?? 'fg'
    if (typeof prefix !== 'string' || /[{}]/.test(prefix)) {
      throw new OptionsError(`prefix: must not contain '{' or '}', got ${JSON.stringify(prefix)}`)
    }
    const maxPending = options.maxPending ?? 1000
    if (!Number.isInteger(maxPending) || maxPending < 1) {
      throw new OptionsError(`maxPending: expected a positive integer, got ${String(maxPending)}`)
    }
    const sources = [options.client, options.url, options.cluster].filter((s) => s !== undefined)
    if (sources.length > 1) {
      throw new OptionsError('client, url, cluster: give only one of them')
    }
    const leaseMs = options.concurrencyLeaseMs ?? 60_000
    if (!Number.isInteger(leaseMs) || leaseMs < 1) {
      throw new OptionsError(
        `concurrencyLeaseMs: expected a positive integer, got ${String(leaseMs)}`,
      )
    }
    const clock = options.clock ?? 'redis'
    if (clock !== 'redis' && clock !== 'caller' && typeof clock !== 'function') {
      throw new OptionsError(
        `clock: expected 'redis', 'caller' or a function, got ${String(clock)}`,
      )
    }

    this.prefix = prefix
    this.timeoutMs = timeoutMs
    this.fallback = options.fallback
    this.clock = clock
    this.maxPending = maxPending
    this.leaseMs = leaseMs
    this.warn = throttledWarn(scopeLogger(options.logger, 'floodgate-redis'))

    if (options.client) {
      this.client = options.client
      this.owned = false
    } else if (options.cluster) {
      this.client = new Cluster(options.cluster, {
        ...options.clusterOptions,
        enableOfflineQueue: false,
        // A command cut off by a dead connection may have run; never resend it (P12).
        retryDelayOnFailover: 0,
        // Without resends, nothing else would notice a promoted replica: poll the topology.
        slotsRefreshInterval: options.clusterOptions?.slotsRefreshInterval ?? 2000,
        redisOptions: {
          ...options.clusterOptions?.redisOptions,
          ...limiterRedisOptions(timeoutMs),
        },
      })
      this.owned = true
    } else {
      const base = { ...options.redisOptions, ...limiterRedisOptions(timeoutMs) }
      this.client = options.url ? new Redis(options.url, base) : new Redis(base)
      this.owned = true
    }
    // An unhandled 'error' event would crash the process; failures surface per call instead.
    if (this.owned) this.client.on('error', () => {})
    const client = this.client
    this.ready =
      client.status === 'ready'
        ? Promise.resolve()
        : new Promise<void>((resolve) => client.once('ready', () => resolve()))
    this.isCluster = 'isCluster' in this.client && this.client.isCluster === true

    this.scripts = new Map()
  }

  /**
   * Every call settles within `timeoutMs` (a fallback that answers synchronously adds
   * nothing), so the limiter need not arm a timer of its own.
   */
  get settlesWithinMs(): number | undefined {
    return this.fallback && this.fallback.synchronous !== true ? undefined : this.timeoutMs
  }

  /** Decide every entry of a request in one script call (one per hash tag on a Cluster). */
  consume(entries: readonly ConsumeEntry[], nowMs: number): Promise<readonly AlgorithmResult[]> {
    if (entries.length === 0) return Promise.resolve([])
    const now = this.now(nowMs)
    let result: Promise<readonly AlgorithmResult[]>
    if (!this.isCluster) {
      result = this.run('c', now, entries)
    } else {
      const groups = groupByTag(entries)
      result =
        groups.length === 1 ? this.run('c', now, entries) : this.consumeSplit(entries, groups, now)
    }
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
    await this.refundRedis(entries, this.now(nowMs))
    // The units may have been charged there while Redis was failing; a refund of units that
    // were never charged leaves a fresh state fresh.
    if (this.fallback) await this.fallback.refund(entries, nowMs)
  }

  private async refundRedis(entries: readonly RefundEntry[], now: string): Promise<void> {
    const list = entries.map((e) => ({ ...e, maxWaitMs: 0, shadow: false }))
    try {
      if (!this.isCluster) await this.run('r', now, list)
      else
        await Promise.all(
          groupByTag(list).map((g) =>
            this.run(
              'r',
              now,
              g.map((i) => list[i]!),
            ),
          ),
        )
    } catch (err) {
      // The units stay charged until the state's TTL: stricter for a while, never looser.
      this.report(err, 'redis store refund failed')
    }
  }

  /** Close the client when Floodgate created it; a client passed in stays open. */
  async close(): Promise<void> {
    await this.fallback?.close?.()
    if (!this.owned) return
    try {
      await this.client.quit()
    } catch {
      this.client.disconnect()
    }
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
   */
  private async consumeSplit(
    entries: readonly ConsumeEntry[],
    groups: number[][],
    now: string,
  ): Promise<readonly AlgorithmResult[]> {
    const parts = await Promise.all(
      groups.map((g) =>
        this.run(
          'c',
          now,
          g.map((i) => entries[i]!),
        ),
      ),
    )
    const results: AlgorithmResult[] = new Array<AlgorithmResult>(entries.length)
    let allowed = true
    groups.forEach((g, gi) =>
      g.forEach((entryIndex, k) => {
        const r = parts[gi]![k]!
        results[entryIndex] = r
        if (!entries[entryIndex]!.shadow && !r.allowed) allowed = false
      }),
    )
    if (allowed) return results
    const undo: RefundEntry[] = []
    groups.forEach((g) => {
      // A group recorded only if none of its own non-shadow entries refused.
      const recorded = g.every((i) => entries[i]!.shadow || results[i]!.allowed)
      if (recorded) for (const i of g) if (results[i]!.allowed) undo.push(entries[i]!)
    })
    if (undo.length > 0) await this.refundRedis(undo, now)
    return results
  }

  /**
   * Queue one request's entries for the next script call of their batch. Requests started in
   * the same turn of the event loop (every request read in its poll phase, every caller woken
   * by one batch's reply) share one EVALSHA and one `TIME`, up to {@link BATCH_REQUESTS} per
   * call. The deadline runs from when the batch opened, so no request waits past `timeoutMs`.
   */
  private run(
    mode: 'c' | 'r',
    now: string,
    entries: readonly BatchEntry[],
  ): Promise<AlgorithmResult[]> {
    if (this.pending >= this.maxPending) {
      return Promise.reject(
        new FloodgateError(
          'FG_ERR_STORE_TIMEOUT',
          `redis store: ${this.pending} calls already waiting on Redis (maxPending); not sending more`,
        ),
      )
    }
    const id = this.scriptId(entries)
    // A script call touches one slot on a Cluster and runs at one `now`: batch accordingly.
    const batchKey = this.isCluster ? `${id}|${now}|${hashTag(entries[0]!.key)}` : `${id}|${now}`
    let batch = this.open.get(batchKey)
    if (!batch) {
      batch = this.openBatch(batchKey, id, now)
    }
    this.pending++
    const n = entries.length
    const packed = Buffer.allocUnsafe(REQUEST_HEADER_BYTES + n * ENTRY_BYTES)
    packed.writeInt16LE(mode === 'c' ? n : -n, 0)
    for (let i = 0; i < n; i++) {
      const e = entries[i]!
      const rule = e.rule
      const name = rule.algorithm.name
      batch.keys.push(redisKey(this.prefix, e.key, rule.stateId))
      const o = REQUEST_HEADER_BYTES + i * ENTRY_BYTES
      packed.writeUInt8(batch.algorithms.length === 1 ? 1 : batch.algorithms.indexOf(name) + 1, o)
      packed.writeDoubleLE(rule.params.limit, o + 1)
      packed.writeDoubleLE(rule.params.windowMs || 0, o + 9)
      packed.writeDoubleLE(rule.params.burst, o + 17)
      packed.writeDoubleLE(e.cost, o + 25)
      packed.writeDoubleLE(e.maxWaitMs, o + 33)
      packed.writeDoubleLE(e.shadow ? 1 : 0, o + 41)
      // Concurrency leases are a variable-size state: 0 tells the script to take what is stored.
      packed.writeDoubleLE(
        name === 'concurrency' ? 0 : rule.algorithm.stateSize(rule.params),
        o + 49,
      )
    }
    batch.packed.push(packed)
    const result = new Promise<AlgorithmResult[]>((resolve, reject) => {
      batch.requests.push({ mode, entries, resolve, reject })
    })
    if (batch.requests.length >= BATCH_REQUESTS) this.send(batch)
    return result
  }

  private openBatch(batchKey: string, id: string, now: string): Batch {
    const batch: Batch = {
      key: batchKey,
      id,
      now,
      // The id lists the script's algorithms already sorted (see scriptId).
      algorithms: id.split(',') as AlgorithmName[],
      requests: [],
      keys: [],
      packed: [],
      sent: false,
      timedOut: false,
      deadline: performance.now() + this.timeoutMs,
      timer: setTimeout(() => this.timeOut(batch), this.timeoutMs),
    }
    this.open.set(batchKey, batch)
    if (!this.flushScheduled) {
      this.flushScheduled = true
      setImmediate(this.flush)
    }
    return batch
  }

  /** Send every batch still open: the end of the turn in which their requests started. */
  private readonly flush = (): void => {
    this.flushScheduled = false
    for (const batch of this.open.values()) this.send(batch)
  }

  private send(batch: Batch): void {
    // A handler that hogged the event loop can make a batch miss its deadline before it leaves.
    if (performance.now() >= batch.deadline) {
      clearTimeout(batch.timer)
      this.timeOut(batch)
      return
    }
    this.open.delete(batch.key)
    batch.sent = true
    const slack = this.clock === 'redis' ? 0 : CALLER_CLOCK_TTL_SLACK_MS
    const packed = batch.packed.length === 1 ? batch.packed[0]! : Buffer.concat(batch.packed)
    let call: Promise<number[]>
    try {
      call = this.script(batch.id)(
        batch.keys.length,
        ...batch.keys,
        batch.now,
        slack,
        this.leaseMs,
        packed,
      )
    } catch (err) {
      // Sent from a setImmediate, a synchronous throw would be uncaught: fail the batch instead.
      call = Promise.reject(err instanceof Error ? err : new Error(String(err)))
    }
    call.then(
      (reply) => {
        clearTimeout(batch.timer)
        let f = 0
        for (const req of batch.requests) {
          this.pending--
          const results = toResults(reply, f, req.entries.length)
          f += req.entries.length * RESULT_FIELDS
          if (batch.timedOut) this.undoLateAnswer(req.mode, req.entries, results, batch.now)
          else req.resolve(results)
        }
      },
      (err: unknown) => {
        clearTimeout(batch.timer)
        this.pending -= batch.requests.length
        if (this.isCluster) this.refreshTopology()
        if (batch.timedOut) return
        // A user-supplied client's own commandTimeout may fire first: it is a missed deadline too.
        if (err instanceof Error && err.message === 'Command timed out') this.timeOut(batch)
        else {
          const error = err instanceof Error ? err : new Error(String(err))
          for (const req of batch.requests) req.reject(error)
        }
      },
    )
  }

  /**
   * The batch missed its deadline: its requests fail now (the limiter fails open). A batch
   * that had not left yet is dropped unsent, so it is never counted.
   */
  private timeOut(batch: Batch): void {
    if (batch.timedOut) return
    batch.timedOut = true
    if (!batch.sent) {
      this.open.delete(batch.key)
      this.pending -= batch.requests.length
    }
    const error = new FloodgateError(
      'FG_ERR_STORE_TIMEOUT',
      `redis store: no answer within ${this.timeoutMs} ms`,
    )
    for (const req of batch.requests) req.reject(error)
  }

  /**
   * The script id for the algorithms of these entries ('token-bucket',
   * 'fixed-window,token-bucket', …). One script per algorithm set keeps each call cheap (Lua
   * allocates every function a script defines on every call) while a request whose rules mix
   * algorithms still takes one round trip.
   */
  private scriptId(entries: readonly { rule: { algorithm: { name: AlgorithmName } } }[]): string {
    if (entries.length === 1) return entries[0]!.rule.algorithm.name
    return scriptAlgorithms(entries.map((e) => e.rule.algorithm.name)).join(',')
  }

  /** The script of an algorithm set ({@link RedisStore.scriptId}), defined on first use. */
  private script(id: string): DecideFn {
    let fn = this.scripts.get(id)
    if (fn) return fn
    fn = scriptCommand<DecideFn>(this.client, decideScript(id.split(',') as AlgorithmName[]))
    this.scripts.set(id, fn)
    return fn
  }

  /**
   * Redis ran a script after the caller gave up on it (the request passed unjudged): give back
   * the concurrency slots it took, or they would stay taken until their lease expires. Rate
   * units stay charged: the request did pass, and charging it once is right.
   */
  private undoLateAnswer(
    mode: 'c' | 'r',
    entries: readonly RefundEntry[],
    results: readonly AlgorithmResult[],
    now: string,
  ): void {
    if (mode !== 'c') return
    const recorded = entries.every((e, i) => ('shadow' in e && e.shadow) || results[i]!.allowed)
    if (!recorded) return
    const slots = entries.filter(
      (e, i) => e.rule.algorithm.name === 'concurrency' && results[i]!.allowed,
    )
    if (slots.length > 0) void this.refundRedis(slots, now)
  }

  /**
   * On a Cluster, a failing call may mean a primary died and a replica took its slots. ioredis
   * learns the new layout from a MOVED reply or a failover retry, and Floodgate disables the
   * retry (it could replay a script): ask for the slot map instead, at most twice a second.
   */
  private refreshTopology(): void {
    const t = Date.now()
    if (t - this.lastRefreshMs < 500) return
    this.lastRefreshMs = t
    ;(this.client as Cluster).refreshSlotsCache()
  }

  private report(err: unknown, msg: string): void {
    this.warn({ err }, msg)
  }
}

/** The `n` results that start at field `from` of a batch's reply. */
function toResults(reply: number[], from: number, n: number): AlgorithmResult[] {
  const out: AlgorithmResult[] = new Array<AlgorithmResult>(n)
  for (let i = 0; i < n; i++) {
    const b = from + i * RESULT_FIELDS
    out[i] = {
      allowed: reply[b] === 1,
      waitMs: reply[b + 1]!,
      limit: reply[b + 2]!,
      remaining: reply[b + 3]!,
      resetMs: reply[b + 4]!,
      retryAfterMs: reply[b + 5]!,
    }
  }
  return out
}

/** Entry indices grouped by hash tag, in first-seen order. */
function groupByTag(entries: readonly { key: string }[]): number[][] {
  const byTag = new Map<string, number[]>()
  entries.forEach((e, i) => {
    const tag = hashTag(e.key)
    const g = byTag.get(tag)
    if (g) g.push(i)
    else byTag.set(tag, [i])
  })
  return [...byTag.values()]
}

/**
 * Create a {@link RedisStore}. With `url` or `cluster`, Floodgate creates the ioredis client
 * with limiter-safe settings (no offline queue, no retries or resends of a script whose
 * outcome is unknown, a command timeout of `timeoutMs`) and closes it on `close()`.
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
