import type { CompiledRule } from '@floodgate/core/algorithms'
import { hashTag } from '../redis-key.js'

/** One (rule, client key) whose consumption this host shares with the fleet. */
export interface Tracked {
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
  /**
   * Its rule was removed while it still held units to send: it syncs until they are in
   * Redis, then is dropped (unless the rule comes back first).
   */
  retired: boolean
}

/** Units a host admitted that Redis has not confirmed, per {@link TrackedKeys.unsent}. */
export interface UnsentUnits {
  /** Admitted and not sent yet: not in Redis. */
  readonly unsent: number
  /** Sent in a batch whose reply never came: in Redis or not, nobody knows. */
  readonly unconfirmed: number
}

/** Whether the entry holds units Redis has not confirmed (to send, or sent unanswered). */
export function hasUnsent(t: Tracked): boolean {
  return t.pending !== 0 || t.unacked.length > 0
}

/** How many entries a new key inspects, at most, to find one it may drop. */
const EVICTION_SCAN = 32

/**
 * The (rule, client key) pairs a host shares with the fleet: stateId → client key → entry,
 * two levels so the hot path builds no string, with a one-entry cache of the last rule's map
 * (most requests hit the same rule again).
 *
 * Bounded: past `maxKeys` entries, a new key drops an entry whose units are all in Redis (it
 * is read again if it comes back). The search goes on where the last one stopped, round the
 * whole table, so busy entries (units to send, a read in flight) cannot hide the idle ones
 * behind them, in this rule's map or another's. Entries still holding units to send are never
 * dropped, so the table can exceed `maxKeys` by at most the keys admitted since the last
 * round; a flood of one-off client keys cannot grow it further.
 */
export class TrackedKeys {
  private readonly byState = new Map<string, Map<string, Tracked>>()
  private count = 0
  private lastRule: CompiledRule | undefined
  private lastKeys: Map<string, Tracked> | undefined
  /** Where the search for an entry to drop goes on; restarted after each full turn. */
  private scan: Iterator<Tracked> | undefined

  /**
   * @param prefix - The store's key prefix: fleet counters live at `prefix:{tag}:stateId:synced`.
   * @param maxKeys - Entries held before a new key drops an old one.
   * @param onAdded - Called with every new entry (its fleet level is not known yet).
   */
  constructor(
    private readonly prefix: string,
    private readonly maxKeys: number,
    private readonly onAdded: (t: Tracked) => void,
  ) {}

  /** Number of entries held. */
  get size(): number {
    return this.count
  }

  /** The entry of (rule, key), if this host shares it. */
  find(rule: CompiledRule, key: string): Tracked | undefined {
    const keys = rule === this.lastRule ? this.lastKeys : this.byState.get(rule.stateId)
    return keys?.get(key)
  }

  /** The entry of (rule, key), created (and reported to `onAdded`) when it is new. */
  track(rule: CompiledRule, key: string): Tracked {
    let keys = rule === this.lastRule ? this.lastKeys : undefined
    if (!keys) {
      keys = this.byState.get(rule.stateId)
      if (keys) {
        this.lastRule = rule
        this.lastKeys = keys
      }
    }
    let t = keys?.get(key)
    if (t) {
      if (t.retired) t.retired = false
      return t
    }
    // Room first: dropping the last entry of this rule's map drops the map itself.
    if (this.count >= this.maxKeys) this.makeRoom()
    keys = this.byState.get(rule.stateId)
    if (!keys) {
      keys = new Map()
      this.byState.set(rule.stateId, keys)
    }
    this.lastRule = rule
    this.lastKeys = keys
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
      retired: false,
    }
    keys.set(key, t)
    this.count++
    this.onAdded(t)
    return t
  }

  /** Stop sharing this entry (a no-op when it was already dropped or replaced). */
  untrack(t: Tracked): void {
    const keys = this.byState.get(t.rule.stateId)
    if (keys?.get(t.key) !== t) return
    keys.delete(t.key)
    this.count--
    if (keys.size === 0) {
      this.byState.delete(t.rule.stateId)
      if (this.lastKeys === keys) this.lastKeys = undefined
    }
  }

  /**
   * Whether a new entry can be added: past twice `maxKeys`, only when one whose units are all
   * in Redis can be dropped first. Entries with units to send are never dropped, so while Redis
   * is away (no round confirms anything) a flood of new client keys would otherwise grow the
   * table without bound.
   */
  hasRoom(): boolean {
    if (!this.full) return true
    this.makeRoom()
    return !this.full
  }

  /** At twice `maxKeys` entries: a new one is added only if {@link hasRoom} finds it room. */
  get full(): boolean {
    return this.count >= 2 * this.maxKeys
  }

  /** Whether the entry for this key is held, or could be added ({@link hasRoom}). */
  hasRoomFor(stateId: string, key: string): boolean {
    return this.get(stateId, key) !== undefined || this.hasRoom()
  }

  /** The entry held for this stateId and key, whatever rule object compiled it. */
  get(stateId: string, key: string): Tracked | undefined {
    return this.byState.get(stateId)?.get(key)
  }

  /** Every entry, oldest first within each rule. */
  *all(): Generator<Tracked> {
    for (const keys of this.byState.values()) yield* keys.values()
  }

  /**
   * Keep the entries of these rule states; of the others, keep (as retired) only those that
   * still hold units Redis has not confirmed, so that they are sent. An entry of a rule that
   * is back is no longer retired.
   */
  retain(stateIds: ReadonlySet<string>): void {
    for (const [id, keys] of this.byState) {
      const kept = stateIds.has(id)
      for (const t of keys.values()) {
        if (kept) t.retired = false
        else if (hasUnsent(t)) t.retired = true
        else this.untrack(t)
      }
    }
    this.lastRule = undefined
    this.lastKeys = undefined
  }

  /** What the entries hold that Redis has not confirmed, in units. */
  unsent(): UnsentUnits {
    let unsent = 0
    let unconfirmed = 0
    for (const t of this.all()) {
      unsent += t.pending
      for (let i = 1; i < t.unacked.length; i += 2) unconfirmed += t.unacked[i]!
    }
    return { unsent, unconfirmed }
  }

  /** Drop every entry. */
  clear(): void {
    this.byState.clear()
    this.count = 0
    this.scan = undefined
    this.lastRule = undefined
    this.lastKeys = undefined
  }

  /**
   * Drop an entry with nothing left to send, met among the next few of the search; two while
   * the table is past `maxKeys` (a search that found none before), so it comes back to it.
   */
  private makeRoom(): void {
    let drops = Math.min(2, this.count - this.maxKeys + 1)
    for (let i = 0; i < EVICTION_SCAN && drops > 0; i++) {
      const t = this.nextToInspect()
      if (t === undefined) return
      // The search may meet an entry already dropped (its map is gone from the table).
      if (this.get(t.rule.stateId, t.key) !== t) continue
      if (!hasUnsent(t) && !t.reading) {
        this.untrack(t)
        drops--
      }
    }
  }

  /** The next entry of the search, starting a new turn at the end of the table. */
  private nextToInspect(): Tracked | undefined {
    for (let turn = 0; turn < 2; turn++) {
      this.scan ??= this.all()
      const step = this.scan.next()
      if (step.done !== true) return step.value
      this.scan = undefined
    }
    return undefined
  }
}
