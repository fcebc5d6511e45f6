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
import { hashTag } from './redis-key.js'
import { scriptCommand } from './script-command.js'
import { throttledWarn } from './throttled-warn.js'
import {
  ARGV_HEADER,
  ENTRY_NUMBERS_BYTES,
  ARGV_PER_ENTRY,
  RESULT_FIELDS,
  decideScript,
} from './scripts/decide-script.js'
import type { Socket } from 'node:net'

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
/** Scripts written to the socket together; see {@link RedisStore.corkOnce}. */
const CORK_BATCH = 16

/**
 * A Store that keeps every rule's state in Redis, so a fleet of hosts shares one limit.
 *
 * Each request is one EVALSHA of one Lua script that decides all its rules at once
 * (all-or-nothing, mirroring core's algorithms exactly) with Redis `TIME` as the clock. Keys
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
  /** The sockets held by {@link RedisStore.corkOnce} until the end of this tick. */
  private corkedStreams: Socket[] | undefined
  private corkedCalls = 0

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

  private run(
    mode: 'c' | 'r',
    now: string,
    entries: readonly (ConsumeEntry | (RefundEntry & { maxWaitMs: number; shadow: boolean }))[],
  ): Promise<AlgorithmResult[]> {
    if (this.pending >= this.maxPending) {
      return Promise.reject(
        new FloodgateError(
          'FG_ERR_STORE_TIMEOUT',
          `redis store: ${this.pending} calls already waiting on Redis (maxPending); not sending more`,
        ),
      )
    }
    const n = entries.length
    const args: (string | number | Buffer)[] = new Array<string | number | Buffer>(
      n + ARGV_HEADER + n * ARGV_PER_ENTRY,
    )
    args[n] = mode
    args[n + 1] = now
    args[n + 2] = this.clock === 'redis' ? 0 : CALLER_CLOCK_TTL_SLACK_MS
    args[n + 3] = this.leaseMs
    for (let i = 0; i < n; i++) {
      const e = entries[i]!
      const rule = e.rule
      args[i] = `${this.prefix}:{${hashTag(e.key)}}:${rule.stateId}`
      const b = n + ARGV_HEADER + i * ARGV_PER_ENTRY
      args[b] = rule.algorithm.name
      const numbers = Buffer.allocUnsafe(ENTRY_NUMBERS_BYTES)
      numbers.writeDoubleLE(rule.params.limit, 0)
      numbers.writeDoubleLE(rule.params.windowMs || 0, 8)
      numbers.writeDoubleLE(rule.params.burst, 16)
      numbers.writeDoubleLE(e.cost, 24)
      numbers.writeDoubleLE(e.maxWaitMs, 32)
      numbers.writeDoubleLE(e.shadow ? 1 : 0, 40)
      // Concurrency leases are a variable-size state: 0 tells the script to take what is stored.
      numbers.writeDoubleLE(
        rule.algorithm.name === 'concurrency' ? 0 : rule.algorithm.stateSize(rule.params),
        48,
      )
      args[b + 1] = numbers
    }
    this.corkOnce()
    const call = this.script(entries)(n, ...args)
    this.pending++
    return new Promise<AlgorithmResult[]>((resolve, reject) => {
      let timedOut = false
      const timeout = (): void => {
        timedOut = true
        reject(
          new FloodgateError(
            'FG_ERR_STORE_TIMEOUT',
            `redis store: no answer within ${this.timeoutMs} ms`,
          ),
        )
      }
      const timer = setTimeout(timeout, this.timeoutMs)
      call.then(
        (reply) => {
          this.pending--
          clearTimeout(timer)
          const results = toResults(reply, n)
          if (timedOut) this.undoLateAnswer(mode, entries, results, now)
          else resolve(results)
        },
        (err: unknown) => {
          this.pending--
          clearTimeout(timer)
          if (this.isCluster) this.refreshTopology()
          if (timedOut) return
          // A user-supplied client's own commandTimeout may fire first: it is a missed deadline too.
          if (err instanceof Error && err.message === 'Command timed out') timeout()
          else reject(err instanceof Error ? err : new Error(String(err)))
        },
      )
    })
  }

  /**
   * Hold the socket's writes until the event loop's check phase, so the scripts started in
   * this turn (by every request read in its poll phase, or by every reply of a batch) leave in
   * batches of {@link CORK_BATCH}, one `writev` each, instead of one syscall each. Measured
   * with `bench/redis`: HTTP on Fastify, 64 connections, server CPU per response 34.0 µs when
   * released at the end of each tick (one request each), 33.0 µs not held at all, 27.4 µs held
   * to the check phase (peer @fastify/rate-limit: 28.0). Batches, not the whole turn: Redis
   * answers a batch only when it has run all of it, so one big batch makes Node and Redis take
   * turns (64 decisions in flight: 57k decisions/s; batches of 16: 115k).
   * ioredis's own `enableAutoPipelining` would batch too, but it breaks on scripts in ioredis 5.11.
   */
  private corkOnce(): void {
    const held = this.corkedStreams
    if (held) {
      if (++this.corkedCalls % CORK_BATCH === 0) {
        for (const stream of held) {
          stream.uncork()
          stream.cork()
        }
      }
      return
    }
    // On a Cluster, every primary's connection (one socket per node).
    const clients = this.isCluster
      ? (this.client as Cluster).nodes('master')
      : [this.client as Redis]
    const streams: Socket[] = []
    for (const c of clients) {
      const stream = c.stream as Socket | undefined
      if (stream?.writable) {
        stream.cork()
        streams.push(stream)
      }
    }
    if (streams.length === 0) return
    this.corkedStreams = streams
    this.corkedCalls = 1
    setImmediate(() => {
      this.corkedStreams = undefined
      for (const stream of streams) stream.uncork()
    })
  }

  /**
   * The script for the algorithms of these entries, defined on first use. One script per
   * algorithm set keeps each call cheap (Lua allocates every function a script defines on
   * every call) while a request whose rules mix algorithms still takes one round trip.
   */
  private script(entries: readonly { rule: { algorithm: { name: AlgorithmName } } }[]): DecideFn {
    let id: string = entries[0]!.rule.algorithm.name
    if (entries.length > 1) {
      id = [...new Set(entries.map((e) => e.rule.algorithm.name))].sort().join(',')
    }
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

function toResults(reply: number[], n: number): AlgorithmResult[] {
  const out: AlgorithmResult[] = new Array<AlgorithmResult>(n)
  for (let i = 0; i < n; i++) {
    const b = i * RESULT_FIELDS
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
