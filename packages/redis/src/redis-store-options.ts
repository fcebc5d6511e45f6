import type { Clock, Logger, Store } from '@floodgate/core'
import type { RedisConnectionOptions } from './connection.js'

/**
 * Where a RedisStore's decisions take the time from. `'redis'` (production): `TIME` inside
 * the script, so app hosts with skewed clocks agree. `'caller'`: the `nowMs` the limiter
 * passes (its `clock`). A {@link Clock}: called for every decision. The last two exist for
 * tests that drive time themselves.
 */
export type TimeSource = 'redis' | 'caller' | Clock

/** Options of {@link RedisStore} and {@link createRedisStore}. */
export interface RedisStoreOptions extends RedisConnectionOptions {
  /**
   * Prefix of every key. Must not contain `{` or `}`.
   * @default 'fg'
   */
  prefix?: string
  /**
   * Deadline of every call to Redis in milliseconds. Past it the call rejects (the limiter
   * fails open) or, with `fallback`, the fallback decides. The store declares it to the
   * limiter as its `settlesWithinMs`.
   * @default 50
   */
  callTimeoutMs?: number
  /**
   * The old name of {@link RedisStoreOptions.callTimeoutMs}; works until the next version,
   * with a `FG_WRN_OPTION_RENAMED` warning.
   * @deprecated Use `callTimeoutMs`.
   */
  timeoutMs?: number
  /**
   * A store asked when Redis fails or misses the deadline, typically a MemoryStore. Its
   * answers are per host (a fleet of N hosts admits up to N × limit while Redis is down).
   */
  fallback?: Store
  /**
   * Where decisions take the time from; see {@link TimeSource}.
   * @default 'redis'
   */
  timeSource?: TimeSource
  /**
   * The old name of {@link RedisStoreOptions.timeSource}; works until the next version, with
   * a `FG_WRN_OPTION_RENAMED` warning.
   * @deprecated Use `timeSource`.
   */
  clock?: TimeSource
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
  /**
   * pino-compatible logger for fallback notices, and for the warning about a `client` passed
   * in without limiter-safe settings (`FG_WRN_REDIS_CLIENT_UNSAFE`; on stderr without one).
   */
  logger?: Logger
}
