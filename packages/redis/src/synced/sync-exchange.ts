import { randomBytes } from 'node:crypto'
import { FloodgateError } from '@floodgate/core'
import type { RedisConnection } from '../connection.js'
import { scriptCommand } from '../script-command.js'
import { SYNC_SCRIPT } from '../sync-script.js'
import { idleMs, interval, rememberMs, ttlMs } from './rule-maths.js'
import type { Tracked } from './tracked-keys.js'

/** What the sync script answers for one fleet bucket. */
export interface FleetLevel {
  /** Units of the fleet bucket in use now (above the burst: the fleet is in debt). */
  readonly used: number
  /** Hosts that synced it (read or pushed) recently, this one included. */
  readonly hosts: number
}

/** Keys per script call on a single Redis: bounds how long one call holds Redis. */
export const MAX_KEYS_PER_CALL = 256

type SyncFn = (numKeys: number, ...args: (string | number)[]) => Promise<string[]>

/**
 * Split a round's keys into script calls: on a single Redis, chunks of at most
 * {@link MAX_KEYS_PER_CALL}; on a Cluster, one call per key. Keys of one hash tag share a
 * slot, but while that slot is being migrated Redis refuses (`TRYAGAIN`) a call of several
 * keys its node holds only in part, for as long as the migration lasts, and ioredis resends
 * it every 100 ms: that client's sync failed every round, and its call, still in flight past
 * the round's deadline, held back the next round of every key. A call of one key is always
 * served (following `ASK`); each key's sync stands on its own anyway.
 *
 * @param batch - The keys to sync.
 * @param isCluster - Whether the client is a Redis Cluster.
 * @returns The groups, each one script call.
 */
export function callGroups(batch: readonly Tracked[], isCluster: boolean): Tracked[][] {
  if (!isCluster) {
    const groups: Tracked[][] = []
    for (let i = 0; i < batch.length; i += MAX_KEYS_PER_CALL) {
      groups.push(batch.slice(i, i + MAX_KEYS_PER_CALL))
    }
    return groups
  }
  return batch.map((t) => [t])
}

/** How a {@link SyncExchange} calls Redis. */
export interface SyncExchangeOptions {
  /** Deadline of one round's calls, in ms. */
  readonly timeoutMs: number
  /** The store's sync interval, in ms (how long an idle key stays remembered depends on it). */
  readonly syncMs: number
  /** The app clock: how long ago a key was last used here is sent as a duration. */
  readonly clock: () => number
}

/**
 * A SyncedStore's conversation with Redis: the sync script, called for a round's keys with
 * every call in flight together under one deadline.
 */
export class SyncExchange {
  /** Distinguishes this process's batches in Redis; a restarted host is a new one. */
  readonly hostId: string = randomBytes(12).toString('base64url')
  /** The newest batch seq issued: Redis reads a host's recorded seq above it as none. */
  private seq = 0
  private pending = 0
  /** Calls still unanswered past their deadline. */
  private overdue = 0
  private settled = 0
  private script: SyncFn | undefined

  constructor(
    private readonly connection: RedisConnection,
    private readonly options: SyncExchangeOptions,
  ) {}

  /** A new batch seq, above every one this host sent before. */
  nextSeq(): number {
    return ++this.seq
  }

  /** Whether the client is connected now. */
  get connected(): boolean {
    return this.connection.connected
  }

  /** Script calls settled (answered or failed) so far: whether the link still moves. */
  get settledCalls(): number {
    return this.settled
  }

  /** Script calls sent and not yet answered (late ones included). */
  get inFlight(): number {
    return this.pending
  }

  /**
   * Script calls still unanswered past their deadline: the link is stalled. A call within its
   * deadline (a new key's read, sent while a round waited) says nothing about the link.
   */
  get lateCalls(): number {
    return this.overdue
  }

  /**
   * Send these keys' unacked batches and read their fleet levels: one script call per group
   * (see {@link callGroups}), all in flight together. Replies that come in time go to
   * `onLevels`; a late reply is ignored (its batches stay unacked, and Redis skips them when
   * they are sent again).
   *
   * @param batch - The keys to sync.
   * @param onLevels - Called once per group answered in time, with one level per key.
   * @returns The first failure, a deadline error when a call missed it, or `undefined`.
   */
  async send(
    batch: readonly Tracked[],
    onLevels: (group: readonly Tracked[], levels: readonly FleetLevel[]) => void,
  ): Promise<unknown> {
    const groups = callGroups(batch, this.connection.isCluster)
    let timer: NodeJS.Timeout | undefined
    let late = false
    const deadline = new Promise<void>((resolve) => {
      timer = setTimeout(() => {
        late = true
        resolve()
      }, this.options.timeoutMs)
    })
    let failure: unknown
    const open = new Set<{ overdue: boolean }>()
    const calls = groups.map((g) => {
      this.pending++
      const state = { overdue: false }
      open.add(state)
      return this.call(g)
        .finally(() => {
          this.pending--
          this.settled++
          open.delete(state)
          if (state.overdue) this.overdue--
        })
        .then(
          (reply) => {
            const levels = parseLevels(reply, g.length)
            // Not the script's answer (a broken or hostile server): learn nothing from it and
            // keep the batches unacked, so they are sent again (Redis skips what it applied).
            if (levels === undefined) failure ??= unexpectedReply(reply, g.length)
            else if (!late) onLevels(g, levels)
          },
          (err: unknown) => {
            failure ??= err
          },
        )
    })
    await Promise.race([Promise.all(calls), deadline])
    clearTimeout(timer)
    if (late) {
      for (const state of open) {
        state.overdue = true
        this.overdue++
      }
      failure ??= new Error(`no answer within ${this.options.timeoutMs} ms`)
      this.connection.missedDeadline(this.settled)
    }
    return failure
  }

  private call(group: readonly Tracked[]): Promise<string[]> {
    const args: (string | number)[] = group.map((t) => t.redisKey)
    args.push(this.hostId, this.seq)
    const now = this.options.clock()
    for (const t of group) {
      const r = t.rule
      const n = t.unacked.length / 2
      const since = n > 0 && now > t.lastUseMs ? Math.min(now - t.lastUseMs, idleMs(r)) : 0
      const remember = rememberMs(r, this.options.syncMs)
      args.push(ttlMs(r), interval(r), remember, r.params.burst, since, n, ...t.unacked)
    }
    this.script ??= scriptCommand<SyncFn>(this.connection.client, SYNC_SCRIPT)
    return this.script(group.length, ...args)
  }
}

/**
 * The script answers three strings per key: the fleet total, the units in use, the hosts.
 * Anything else (another length, a level that is not a finite number, a host count below
 * one) gives undefined.
 */
function parseLevels(reply: unknown, keys: number): FleetLevel[] | undefined {
  if (!Array.isArray(reply) || reply.length !== 3 * keys) return undefined
  const levels: FleetLevel[] = []
  for (let i = 0; i < keys; i++) {
    const used = Number(reply[3 * i + 1])
    const hosts = Number(reply[3 * i + 2])
    if (!Number.isFinite(used) || !Number.isInteger(hosts) || hosts < 1) return undefined
    levels.push({ used, hosts })
  }
  return levels
}

function unexpectedReply(reply: unknown, keys: number): FloodgateError {
  const shape = Array.isArray(reply) ? `${reply.length} values` : typeof reply
  return new FloodgateError(
    'FG_ERR_STORE_ANSWER_INVALID',
    `synced store: Redis answered the sync with ${shape} for ${keys} keys; expected 3 numbers per key`,
  )
}
