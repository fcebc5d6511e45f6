import type { Clock, Logger } from '@floodgate/core'
import {
  checkFunction,
  checkLogger,
  checkPositiveInt,
  renamedOption,
} from '@floodgate/core/options'
import type { RedisConnectionOptions } from '../connection.js'
import { checkPrefix } from '../redis-key.js'

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
  syncTimeoutMs?: number
  /**
   * The old name of {@link SyncedStoreOptions.syncTimeoutMs}; works until the next version,
   * with a `FG_WRN_OPTION_RENAMED` warning.
   * @deprecated Use `syncTimeoutMs`.
   */
  timeoutMs?: number
  /**
   * Hard cap on keys held locally (the local MemoryStore's `maxKeys`), and on the keys this
   * host shares with the fleet whose units are all sent. Keys with units still to send are
   * held up to twice this; past that, a request from a new client key is refused (`storeFull`,
   * `retryAfterMs` 1 s) until Redis confirms units.
   * @default 1_000_000
   */
  maxKeys?: number
  /**
   * Clock for the units charged after a sync, in epoch milliseconds. Pass the limiter's
   * clock when tests drive time.
   * @default Date.now
   */
  clock?: Clock
  /** pino-compatible logger: a failed sync is logged at most once per 10 s. */
  logger?: Logger
}

/** {@link SyncedStoreOptions} checked, with every default filled in. */
export interface ResolvedSyncedOptions {
  readonly prefix: string
  readonly syncMs: number
  readonly timeoutMs: number
  /** `undefined` leaves the choice (and the check) to the local MemoryStore. */
  readonly maxKeys: number | undefined
  readonly clock: Clock
  readonly logger: Logger | undefined
}

/**
 * Check a SyncedStore's own options and fill in the defaults. The connection options are
 * checked by the connection itself.
 *
 * @param options - What the caller passed.
 * @returns The options in force.
 * @throws OptionsError naming the first option that is wrong.
 */
export function resolveSyncedOptions(options: SyncedStoreOptions): ResolvedSyncedOptions {
  const syncMs = checkPositiveInt('syncMs', options.syncMs, 100)
  const deadline = renamedOption(
    options,
    'timeoutMs',
    'syncTimeoutMs',
    'SyncedStore',
    options.logger,
  )
  const timeoutMs = checkPositiveInt(deadline.name, deadline.value, 1000)
  const clock = checkFunction('clock', options.clock) ?? Date.now
  checkLogger('logger', options.logger)
  return {
    prefix: checkPrefix(options.prefix),
    syncMs,
    timeoutMs,
    maxKeys: options.maxKeys,
    clock,
    logger: options.logger,
  }
}
