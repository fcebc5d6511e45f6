import { Cluster, Redis, type ClusterNode, type ClusterOptions, type RedisOptions } from 'ioredis'
import type { Logger } from '@floodgate/core'
import { scopeLogger } from '@floodgate/core/algorithms'
import { optionsConflict, refusedOption, stderrWarnings } from '@floodgate/core/options'

/** A client Floodgate can run its script on: a single Redis or a Redis Cluster. */
export type RedisClient = Redis | Cluster

/** Where Redis is: one of `client`, `url` or `cluster` (none: redis://127.0.0.1:6379). */
export interface RedisConnectionOptions {
  /**
   * A client the application already has. Floodgate does not change its settings, so set
   * the ones that matter for a limiter yourself (see docs/distributed.md):
   * `enableOfflineQueue: false`, `maxRetriesPerRequest: 0`,
   * `autoResendUnfulfilledCommands: false` (and on a Cluster `retryDelayOnFailover: 0`,
   * `retryDelayOnClusterDown: 0`). It must be open and not in subscriber or monitor mode
   * (refused otherwise); a `lazyConnect` client is connected when `ready` is read or a
   * SyncedStore first syncs, unless the application connected it first.
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

/**
 * How many deadlines long calls may go unanswered (at least 1 s), while more keep missing
 * theirs, before the connection is presumed dead and reset. Far above one deadline: a Redis
 * that is only slow keeps answering, late, and keeps its connection.
 */
const DEAD_LINK_DEADLINES = 20

/** ioredis settings a limiter needs, applied to every client Floodgate creates. */
function limiterRedisOptions(timeoutMs: number): RedisOptions {
  return {
    // A dead Redis must fail a call now, not park it in a queue for later.
    enableOfflineQueue: false,
    // Reject pending commands on the first reconnect attempt instead of retrying them 20 times.
    maxRetriesPerRequest: 0,
    // A script whose reply was lost may have run: resending it would count a decision twice.
    autoResendUnfulfilledCommands: false,
    // No commandTimeout: the store enforces its deadline itself, bounds what waits, and needs
    // the late replies (to free concurrency slots); a per-command timer in ioredis too would
    // only double the timer work of every call.
    // Not enableAutoPipelining: in ioredis 5.11 a script in an auto-pipeline can throw an
    // uncaught "results[i] is not iterable" from autoPipelining.js (seen in our fleet test).
    connectTimeout: Math.max(1000, timeoutMs),
    // A Redis loading its dataset answers the ready check with an ETA, and ioredis waits that
    // long (up to 10 s) before it asks again: look every second, to serve soon after the end.
    maxLoadingRetryTime: 1000,
    // Keep trying to come back, quickly but without hammering a restarting Redis.
    retryStrategy: (times: number) => Math.min(50 * times, 1000),
  }
}

/**
 * After a failover behind one address (a DNS name, a virtual IP, a proxy), the connection may
 * still reach the old primary, now a replica, which refuses every script (READONLY) for as
 * long as the connection lasts. Reopen it, to reach whatever the address leads to now; the
 * refused call did not run and is not resent. At most once a second, so a Redis that stays a
 * replica is not reconnected on every call.
 */
function reopenOnReadonly(): (err: Error) => boolean {
  let lastMs = -Infinity
  return (err) => {
    if (!err.message.startsWith('READONLY')) return false
    const t = Date.now()
    if (t - lastMs < 1000) return false
    lastMs = t
    return true
  }
}

/**
 * The settings of a client passed in that differ from what a limiter needs (see
 * {@link RedisConnectionOptions.client}): each is named with the value to set. Speed does not
 * depend on them; what they change is what happens when Redis goes away (calls parked or
 * replayed instead of failing at once and being counted at most once).
 *
 * @param client - The application's ioredis client or Cluster.
 * @returns `name: value` for each setting to change, empty when the client is limiter-safe.
 */
export function unsafeClientSettings(client: RedisClient): string[] {
  const out: string[] = []
  const isCluster = 'isCluster' in client && client.isCluster === true
  const own = client.options as {
    enableOfflineQueue?: boolean
    maxRetriesPerRequest?: number | null
    autoResendUnfulfilledCommands?: boolean
    retryDelayOnFailover?: number
    redisOptions?: RedisOptions
  }
  // A Cluster's node connections take these from its redisOptions.
  const node = isCluster ? (own.redisOptions ?? {}) : (own as RedisOptions)
  if (own.enableOfflineQueue !== false) out.push('enableOfflineQueue: false')
  if (node.maxRetriesPerRequest !== 0) out.push('maxRetriesPerRequest: 0')
  if (node.autoResendUnfulfilledCommands !== false) out.push('autoResendUnfulfilledCommands: false')
  if (isCluster && own.retryDelayOnFailover !== 0) out.push('retryDelayOnFailover: 0')
  return out
}

/**
 * Say once, when a store is built, which settings of the application's client to change:
 * with ioredis's defaults a call made while Redis is away is parked until it comes back, and
 * a script cut off by a dropped connection is sent again (one request counted twice).
 */
export function warnUnsafeClient(
  client: RedisClient,
  logger: Logger | undefined,
  component: string,
): void {
  const fix = unsafeClientSettings(client)
  if (fix.length === 0) return
  const sink = logger ? scopeLogger(logger, component) : stderrWarnings
  sink.warn(
    { code: 'FG_WRN_REDIS_CLIENT_UNSAFE', settings: fix },
    `the ioredis client passed to the store keeps ioredis defaults a limiter cannot use: set ${fix.join(', ')} when creating it (or pass url/cluster and let Floodgate create it)`,
  )
}

/**
 * One store's link to Redis: the client (created with limiter-safe settings, or the
 * application's own), when it is ready, and whether closing it is ours to do.
 */
export class RedisConnection {
  /** The ioredis client in use. */
  readonly client: RedisClient
  /** Whether the client is a Redis Cluster. */
  readonly isCluster: boolean
  /**
   * Resolves once the client is connected (at once if it already is), or once it has ended
   * without connecting (closed first); never rejects. On a Cluster, once the slot map is known
   * and every primary's connection is up too, so the first calls are answered rather than
   * refused by a node still connecting.
   */
  readonly ready: Promise<void>
  /** Whether Floodgate created the client, and so closes it. */
  private readonly owned: boolean
  /** How long close() waits for Redis to answer QUIT before dropping the connection. */
  private readonly quitTimeoutMs: number
  /** Silence, while calls miss their deadline, after which the link is presumed dead. */
  private readonly deadLinkMs: number
  private lastRefreshMs = 0
  /** The client's last connection error since it was last ready (its own clients only). */
  private lastError: Error | undefined
  /** Calls settled as of the last missed deadline, and since when that count has not moved. */
  private settledSeen = -1
  private silentSinceMs = 0

  /**
   * @param options - Where Redis is; see {@link RedisConnectionOptions}.
   * @param timeoutMs - The store's deadline, which bounds the connect timeout from below.
   * @param logger - The store's scoped logger, for what the connection itself has to say
   *   (none: stderr).
   * @throws OptionsError when more than one of `client`, `url`, `cluster` is given.
   */
  constructor(options: RedisConnectionOptions, timeoutMs: number, logger?: Logger) {
    this.quitTimeoutMs = timeoutMs
    this.deadLinkMs = Math.max(1000, DEAD_LINK_DEADLINES * timeoutMs)
    const sources = [options.client, options.url, options.cluster].filter((s) => s !== undefined)
    if (sources.length > 1) {
      throw optionsConflict('client, url, cluster: give only one of them')
    }
    if (options.client) {
      checkUsable(options.client)
      this.client = options.client
      this.owned = false
    } else if (options.cluster) {
      this.client = new Cluster(options.cluster, {
        ...options.clusterOptions,
        enableOfflineQueue: false,
        // A command cut off by a dead connection may have run; never resend it, or a decision
        // could be counted twice.
        retryDelayOnFailover: 0,
        // Without resends, nothing else would notice a promoted replica: poll the topology.
        slotsRefreshInterval: options.clusterOptions?.slotsRefreshInterval ?? 2000,
        // CLUSTERDOWN (a slot not served, or the whole cluster down while a failover is under
        // way) fails the call at once: a retry 100 ms later could only answer past the
        // deadline, and the error then names the cause instead of a missed deadline.
        retryDelayOnClusterDown: options.clusterOptions?.retryDelayOnClusterDown ?? 0,
        redisOptions: {
          ...options.clusterOptions?.redisOptions,
          ...limiterRedisOptions(timeoutMs),
        },
      })
      this.owned = true
    } else {
      // An application's own reconnectOnError wins over this one.
      const base = {
        reconnectOnError: reopenOnReadonly(),
        ...options.redisOptions,
        ...limiterRedisOptions(timeoutMs),
      }
      this.client = options.url ? new Redis(options.url, base) : new Redis(base)
      this.owned = true
    }
    this.isCluster = 'isCluster' in this.client && this.client.isCluster === true
    if (this.owned) {
      // An unhandled 'error' event would crash the process: failures surface per call instead,
      // and the last one says why calls fail while the client is not connected.
      this.client.on('error', (err: Error) => (this.lastError = err))
      this.client.on('ready', () => (this.lastError = undefined))
      if (!this.isCluster) {
        watchHandshake(this.client as Redis, this.deadLinkMs)
        skipRefusedReadyCheck(this.client as Redis, logger)
      }
    }
    this.ready = this.isCluster ? clusterReady(this.client as Cluster) : whenReady(this.client)
  }

  /**
   * Connect a `lazyConnect` client that nothing has connected yet, as ioredis does on its
   * first command: a store that waits for the connection before sending anything (`ready`,
   * a SyncedStore's rounds) would otherwise wait forever. Not done when the store is
   * created, so an application may still call `connect()` on its client itself first.
   */
  connectIfLazy(): void {
    if (this.client.status === 'wait') this.client.connect().catch(() => {})
  }

  /** Whether a call sent now can be answered (the client is connected). */
  get connected(): boolean {
    return this.client.status === 'ready'
  }

  /**
   * Why a call cannot be sent now: the client is not connected and failed to connect with
   * this error (a wrong password, an unknown host, a refused connection). Undefined when it is
   * connected or the cause is unknown (a client passed in: its errors are the application's;
   * a Cluster).
   * Calls then fail with it instead of ioredis's "Stream isn't writeable", which names no
   * cause in the log.
   */
  unavailable(): Error | undefined {
    // A Cluster's own errors (a slot-map refresh) say little of why one call failed.
    if (this.isCluster || !this.owned || this.client.status === 'ready') return undefined
    if (this.client.status === 'connect') {
      // Connected, but the handshake is not over: ioredis waits for INFO to say the dataset
      // is loaded, and a Redis loading it refuses everything else (LOADING). The last error
      // says why earlier attempts failed (a wrong password fails each one here).
      const last = this.lastError ? ` (last error: ${this.lastError.message})` : ''
      return new Error(
        `Redis not ready: connected, but its ready check (INFO) says it is loading its dataset (LOADING), or is not answered yet${last}`,
        { cause: this.lastError },
      )
    }
    if (this.lastError === undefined) return undefined
    return new Error(`Redis not connected (${this.client.status}): ${this.lastError.message}`, {
      cause: this.lastError,
    })
  }

  /**
   * A call missed its deadline; `settled` counts the store's calls answered so far. When no
   * call has been answered for 20 deadlines (at least 1 s) while calls keep missing theirs,
   * the link is presumed dead (a blackholed connection, a NAT that forgot it: TCP alone takes
   * about 15 minutes to notice) and a client Floodgate created drops it and reconnects. The calls cut off
   * fail (they already failed open) and are never resent. A Cluster is left to its slot-map
   * refresh, and a client passed in to its owner.
   */
  missedDeadline(settled: number): void {
    if (!this.owned || this.isCluster) return
    const t = Date.now()
    if (settled !== this.settledSeen) {
      this.settledSeen = settled
      this.silentSinceMs = t
      return
    }
    if (t - this.silentSinceMs < this.deadLinkMs || this.client.status !== 'ready') return
    this.silentSinceMs = t
    // Destroyed, not ended: an end() waits for the peer, which never answers (ioredis gives
    // it 2 s). The client sees the socket close and reconnects as after a reset.
    ;(this.client as Redis).stream.destroy()
  }

  /**
   * On a Cluster, a failing call may mean a primary died and a replica took its slots. ioredis
   * learns the new layout from a MOVED reply or a failover retry, and Floodgate disables the
   * retry (it could replay a script): ask for the slot map instead, at most twice a second.
   */
  refreshTopology(): void {
    if (!this.isCluster) return
    const t = Date.now()
    if (t - this.lastRefreshMs < 500) return
    this.lastRefreshMs = t
    ;(this.client as Cluster).refreshSlotsCache()
  }

  /**
   * Close the client when Floodgate created it; a client passed in stays open. QUIT lets the
   * replies already on their way arrive first, but a stalled link or a paused Redis never
   * answers it: past the store's deadline the connection is dropped instead, so close()
   * resolves in bounded time whatever Redis does.
   */
  async close(): Promise<void> {
    if (!this.owned) return
    let timer: ReturnType<typeof setTimeout> | undefined
    const late = new Promise<false>((resolve) => {
      timer = setTimeout(() => resolve(false), this.quitTimeoutMs)
    })
    const quit = this.client.quit().then(
      () => true,
      () => false,
    )
    const answered = await Promise.race([quit, late])
    clearTimeout(timer)
    if (!answered) this.client.disconnect()
  }
}

/**
 * Drop a connection that Redis accepted but whose handshake (AUTH, SELECT, the INFO of the
 * ready check) it leaves unanswered for `silenceMs`: a forgotten NAT entry, a proxy whose
 * backend is gone. ioredis's `connectTimeout` ends when TCP connects, so without this the
 * client would wait in `connect` for good, and every call fail at once. A Redis loading its
 * dataset keeps answering the ready check (every second, see `maxLoadingRetryTime`): bytes
 * arriving keep the connection.
 */
function watchHandshake(client: Redis, silenceMs: number): void {
  let timer: ReturnType<typeof setTimeout> | undefined
  const stop = (): void => {
    clearTimeout(timer)
    timer = undefined
  }
  client.on('connect', () => {
    stop()
    const stream = client.stream
    let seen = stream.bytesRead
    const check = (): void => {
      if (client.status !== 'connect' || client.stream !== stream) return
      if (stream.bytesRead === seen) {
        client.emit(
          'error',
          new Error(
            `Redis accepted the connection but left its handshake unanswered for ${silenceMs} ms`,
          ),
        )
        // Destroyed: the client sees the socket close and reconnects.
        stream.destroy()
        return
      }
      seen = stream.bytesRead
      timer = setTimeout(check, silenceMs).unref()
    }
    timer = setTimeout(check, silenceMs).unref()
  })
  client.on('ready', stop)
  client.on('close', stop)
}

/**
 * Whether `err`, met while `client` is connected but not ready, is Redis refusing the INFO of
 * ioredis's ready check as a command it does not know (`rename-command INFO ""`). ioredis
 * skips the check by itself when the refusal is `NOPERM` (an ACL user without `+info`), but
 * takes any other refusal as a failed connection, and reconnects, forever.
 */
export function isReadyCheckRefusal(client: Redis, err: Error): boolean {
  return (
    client.status === 'connect' &&
    client.options.enableReadyCheck === true &&
    /^ERR unknown command [`']info[`']/i.test(err.message)
  )
}

/**
 * A Redis that refuses INFO would keep a client of ours reconnecting, every call failing open:
 * from the first refusal on, connect without the ready check (ioredis reads the option on each
 * connection, and the refused one is already being reopened), and say so once. The check only
 * waits while Redis loads its dataset: without it, the calls made then fail open, naming
 * `LOADING`, until the load ends.
 */
function skipRefusedReadyCheck(client: Redis, logger: Logger | undefined): void {
  const onError = (err: Error): void => {
    if (!isReadyCheckRefusal(client, err)) return
    client.options.enableReadyCheck = false
    client.off('error', onError)
    ;(logger ?? stderrWarnings).warn(
      { code: 'FG_WRN_REDIS_READY_CHECK_REFUSED', err },
      `Redis refuses INFO, which ioredis's ready check sends (${err.message.trim()}): connecting without the check from now on; while Redis loads its dataset after a restart, decisions fail open naming LOADING`,
    )
  }
  client.on('error', onError)
}

/**
 * Refuse a client passed in that can never run the store's scripts: one closed for good
 * (`quit()` or `disconnect()`), or one in subscriber or monitor mode, where Redis refuses
 * every other command. Each would make every request pass unjudged, for the life of the store.
 */
function checkUsable(client: RedisClient): void {
  if (client.status === 'end') {
    throw refusedOption(
      'client',
      'the ioredis client is closed (quit or disconnected); pass an open client',
    )
  }
  const mode = 'mode' in client ? client.mode : 'normal'
  if (mode !== 'normal') {
    throw refusedOption(
      'client',
      `the ioredis client is in ${mode} mode, where Redis runs no scripts; pass a client of its own to the store (client.duplicate())`,
    )
  }
}

/**
 * Resolves when `client` is ready (at once if it is), or when it ends first (closed before it
 * ever connected, or given up on reconnecting): nothing would wake a waiter after that. Never
 * rejects; whichever event comes first removes the other's listener.
 */
function whenReady(client: RedisClient): Promise<void> {
  if (client.status === 'ready' || client.status === 'end') return Promise.resolve()
  return new Promise<void>((resolve) => {
    const done = (): void => {
      client.off('ready', done)
      client.off('end', done)
      resolve()
    }
    client.once('ready', done)
    client.once('end', done)
  })
}

/**
 * Resolves once the Cluster knows its slot map and every primary's connection is ready. A
 * Cluster client connects to each node on the first command sent to it, and without an
 * offline queue every command that reaches a node still connecting is refused ("Connection is
 * closed"): connect them all up front. A node that cannot be reached (its connection ends)
 * does not hold this up forever.
 */
async function clusterReady(cluster: Cluster): Promise<void> {
  await whenReady(cluster)
  await Promise.all(
    cluster.nodes('master').map(async (node) => {
      if (node.status === 'ready') return
      const up = new Promise<void>((resolve) => {
        node.once('ready', () => resolve())
        node.once('end', () => resolve())
      })
      if (node.status === 'wait') node.connect().catch(() => {})
      await up
    }),
  )
}
