import {
  newResult,
  refuseReservation,
  type Algorithm,
  type AlgorithmParams,
  type AlgorithmResult,
} from '../algorithms/algorithm.js'
import { FloodgateError } from '../errors.js'
import { checkPositiveInt } from '../options/checks.js'
import { checkChargeable, unchargeableRule } from './chargeable.js'
import { IdleQueue } from './idle-queue.js'
import type { CompiledRule } from '../rules/compiled-rules.js'
import type { ConsumeEntry, RefundEntry, StateEntry, Store } from './store.js'

/** Options of {@link MemoryStore}. */
export interface MemoryStoreOptions {
  /**
   * Hard cap on keys across all rules. Only state that is back to fresh (a client that has
   * fully recovered and holds no concurrency slot) is ever evicted, so forgetting it cannot
   * admit anything that keeping it would refuse. When the store is full of state that is not
   * fresh yet, requests from new keys are refused (fail closed) until some state recovers;
   * clients that already have state are decided as usual. At most 2^24 - 1, V8's Map ceiling.
   * @default 1_000_000
   */
  readonly maxKeys?: number | undefined
}

/** The largest `maxKeys`: a V8 Map throws a RangeError at 2^24 entries. */
export const MAX_KEYS_CEILING: number = 2 ** 24 - 1
// How soon a new key refused because the store is full is told to come back.
const STORE_FULL_RETRY_MS = 1000
// How many entries a new key may inspect, at most, to find room under pressure.
const PRESSURE_SCAN = 32
// How many entries each new key sweeps for idle state, so cleanup keeps pace with inserts.
const SWEEP_PER_INSERT = 2
// The background sweep leaves state alone until it has been idle this long: a busy client of a
// fast-refilling rule is idle between its own requests, and dropping and re-creating its state
// every time would be pure churn. Under pressure, idle state goes first regardless.
const SWEEP_GRACE_MS = 60_000

/** Whether a slot is in use by the request being decided, so it must not be evicted. */
type Pinned = (table: RuleTable, slot: number) => boolean

// What IdleQueue.pop hands back, reused.
const POPPED = { key: '', slot: 0 }

/**
 * State of one rule: key → slot in a packed Float64Array (a stride of the algorithm's state
 * size per slot), so a key costs its Map entry plus a few numbers, not an object.
 */
class RuleTable {
  readonly index = new Map<string, number>()
  readonly stride: number
  slab: Float64Array
  private readonly freeSlots: number[] = []
  private nextSlot = 1 // slot 0 stays fresh: it answers for keys refused because the store is full
  private sweep: Iterator<[string, number]> | undefined
  /**
   * Built when a full store's scans meet no fresh entry, then kept while the store stays at
   * least half full: every entry has a record no later than the moment its state can be fresh
   * (a write that may bring that moment forward, a new key or a refund, adds one), so a
   * newcomer is refused only when no entry is fresh, and without a scan of the whole table.
   */
  private queue: IdleQueue | undefined

  constructor(
    readonly algorithm: Algorithm,
    readonly params: AlgorithmParams,
  ) {
    this.stride = algorithm.stateSize(params)
    this.slab = new Float64Array(this.stride * 64)
  }

  /** Slot of an existing key, or -1. */
  find(key: string): number {
    const slot = this.index.get(key)
    return slot === undefined ? -1 : slot
  }

  allocate(key: string): number {
    let slot = this.freeSlots.pop()
    if (slot === undefined) {
      slot = this.nextSlot++
      const need = (slot + 1) * this.stride
      if (need > this.slab.length) {
        const grown = new Float64Array(Math.max(need, this.slab.length * 2))
        grown.set(this.slab)
        this.slab = grown
      }
    }
    this.index.set(key, slot)
    this.touched(key, slot)
    return slot
  }

  /**
   * After a write that may bring forward the moment the entry is fresh (a new key, a refund):
   * the queue looks at it again. A queue whose records outnumber twice the keys is dropped (and
   * built again when next needed), so it never holds more.
   */
  touched(key: string, slot: number): void {
    const q = this.queue
    if (q === undefined) return
    if (q.size >= 2 * this.index.size + 64) this.queue = undefined
    else q.push(Number.NEGATIVE_INFINITY, key, slot)
  }

  /** The store is no longer under pressure: stop keeping the queue up to date. */
  dropQueue(): void {
    this.queue = undefined
  }

  remove(key: string, slot: number): void {
    this.index.delete(key)
    this.slab.fill(0, slot * this.stride, (slot + 1) * this.stride)
    this.freeSlots.push(slot)
  }

  /** Next entry of the round-robin sweep, restarting at the end. */
  private nextEntry(): [string, number] | undefined {
    for (let pass = 0; pass < 2; pass++) {
      this.sweep ??= this.index.entries()
      const step = this.sweep.next()
      if (!step.done) return step.value
      this.sweep = undefined
    }
    return undefined
  }

  isIdle(slot: number, nowMs: number, graceMs = 0): boolean {
    return (
      this.algorithm.idleAtMs(this.slab, slot * this.stride, this.params, nowMs) + graceMs <= nowMs
    )
  }

  /** Remove up to `budget` idle entries met by the sweep; returns how many were removed. */
  sweepIdle(budget: number, nowMs: number, pinned: Pinned): number {
    let removed = 0
    for (let i = 0; i < budget; i++) {
      const e = this.nextEntry()
      if (!e) break
      if (this.isIdle(e[1], nowMs, SWEEP_GRACE_MS) && !pinned(this, e[1])) {
        this.remove(e[0], e[1])
        removed++
      }
    }
    return removed
  }

  /**
   * Under pressure: evict one entry whose state is back to fresh; false when none found.
   * State that is not fresh is never evicted, whatever room it has left: a client that
   * "still has room" for one unit may not have room for what it pays, holds concurrency
   * slots, or carries debt, and forgetting any of that would admit it afresh.
   */
  evictOne(nowMs: number, pinned: Pinned): boolean {
    for (let i = 0; i < PRESSURE_SCAN; i++) {
      const e = this.nextEntry()
      if (!e) break
      if (this.isIdle(e[1], nowMs) && !pinned(this, e[1])) {
        this.remove(e[0], e[1])
        return true
      }
    }
    return false
  }

  /**
   * Evict an entry whose state is back to fresh wherever it sits in the table; false only when
   * none is (or each one that is belongs to the request being decided).
   */
  evictFresh(nowMs: number, pinned: Pinned): boolean {
    let q = this.queue
    // Rebuilt when the clock went back, since a state dated past the horizon then reads as
    // fresh at once, and when stale records outnumber the entries.
    if (q === undefined || nowMs < q.nowMs || q.size > 2 * this.index.size + 64) {
      q = this.queue = new IdleQueue(nowMs)
      for (const [key, slot] of this.index) q.push(this.idleAt(slot, nowMs), key, slot)
    }
    q.nowMs = nowMs
    let evicted = false
    // Fresh entries of the request being decided: looked at again next time.
    const keptKeys: string[] = []
    const keptSlots: number[] = []
    while (q.topAt() <= nowMs) {
      q.pop(POPPED)
      const { key, slot } = POPPED
      // Removed since, or its slot now holds another key (which has its own record).
      if (this.index.get(key) !== slot) continue
      const idleAt = this.idleAt(slot, nowMs)
      if (idleAt > nowMs) q.push(idleAt, key, slot)
      else if (pinned(this, slot)) {
        keptKeys.push(key)
        keptSlots.push(slot)
      } else {
        this.remove(key, slot)
        evicted = true
        break
      }
    }
    for (let i = 0; i < keptKeys.length; i++) {
      q.push(Number.NEGATIVE_INFINITY, keptKeys[i]!, keptSlots[i]!)
    }
    return evicted
  }

  private idleAt(slot: number, nowMs: number): number {
    return this.algorithm.idleAtMs(this.slab, slot * this.stride, this.params, nowMs)
  }
}

/**
 * In-process store: synchronous (no promise on the hot path), packed state, idle state
 * evicted without a timer per key, and a hard cap on keys that holds under a flood.
 *
 * Each host limits alone: a fleet of N hosts admits up to N × limit. Use the Redis store to
 * share limits across hosts.
 *
 * @example
 * const limiter = createLimiter({ rules, store: new MemoryStore({ maxKeys: 500_000 }) })
 */
export class MemoryStore implements Store {
  readonly synchronous = true
  private readonly maxKeys: number
  private readonly tables = new Map<string, RuleTable>()
  private readonly results: AlgorithmResult[] = []
  private keyCount = 0
  // Slots the request being decided has found or allocated; a later entry of the same
  // request must not evict them (a freshly allocated slot is idle until committed).
  private readonly pinTables: RuleTable[] = []
  private readonly pinSlots: number[] = []
  private pinCount = 0
  private readonly pinned: Pinned = (table, slot) => {
    for (let i = 0; i < this.pinCount; i++) {
      if (this.pinSlots[i] === slot && this.pinTables[i] === table) return true
    }
    return false
  }
  // One-entry cache of the last rule's table: most requests hit the same rule again.
  private lastRule: CompiledRule | undefined
  private lastTable: RuleTable | undefined
  /** Requests (and charges) refused or dropped because the store was full of non-fresh state. */
  overflowed = 0

  constructor(options: MemoryStoreOptions = {}) {
    this.maxKeys = checkPositiveInt(
      'MemoryStore maxKeys',
      options.maxKeys,
      1_000_000,
      MAX_KEYS_CEILING,
    )
  }

  /** Number of keys held across all rules. */
  get size(): number {
    return this.keyCount
  }

  private table(rule: CompiledRule): RuleTable {
    if (rule === this.lastRule) return this.lastTable!
    let t = this.tables.get(rule.stateId)
    if (!t) {
      t = new RuleTable(rule.algorithm, rule.params)
      this.tables.set(rule.stateId, t)
    }
    this.lastRule = rule
    this.lastTable = t
    return t
  }

  /**
   * Slot of the key, allocated when new; -1 when the store is full of non-fresh state. A key
   * with no state asked for nothing (`cost` 0, such as a ban check) gets the fresh slot 0,
   * which is read and never written: it has nothing to record, so it takes no room.
   */
  private slotFor(t: RuleTable, key: string, nowMs: number, cost = 1): number {
    const found = t.find(key)
    if (found >= 0) return found
    if (cost === 0) return 0
    this.keyCount -= t.sweepIdle(SWEEP_PER_INSERT, nowMs, this.pinned)
    if (this.keyCount >= this.maxKeys) {
      if (!this.makeRoom(t, nowMs)) {
        this.overflowed++
        return -1
      }
    } else if (this.keyCount < this.maxKeys / 2) t.dropQueue()
    this.keyCount++
    return t.allocate(key)
  }

  /**
   * Evict fresh state from the rule's own table first, then from the others: a short scan of
   * each, then, if that met none, a search of each that finds fresh state wherever it sits.
   */
  private makeRoom(t: RuleTable, nowMs: number): boolean {
    const room =
      this.evictWith(t, (table) => table.evictOne(nowMs, this.pinned)) ||
      this.evictWith(t, (table) => table.evictFresh(nowMs, this.pinned))
    if (room) this.keyCount--
    return room
  }

  /** Runs `evict` on the rule's own table, then on each other, until one evicts an entry. */
  private evictWith(t: RuleTable, evict: (table: RuleTable) => boolean): boolean {
    if (evict(t)) return true
    for (const other of this.tables.values()) if (other !== t && evict(other)) return true
    return false
  }

  /** The answer to a new key the store has no room for: refused, as a fresh client would look. */
  private storeFull(t: RuleTable, e: ConsumeEntry, nowMs: number, out: AlgorithmResult): void {
    t.algorithm.consume(t.slab, 0, t.params, e.cost, nowMs, 0, false, out)
    out.allowed = false
    out.waitMs = 0
    out.remaining = 0
    out.retryAfterMs = STORE_FULL_RETRY_MS
    out.storeFull = true
  }

  private result(i: number): AlgorithmResult {
    let r = this.results[i]
    if (!r) {
      r = newResult()
      this.results[i] = r
    }
    // Only a refusal for want of room carries the flag; a reused result drops it.
    if (r.storeFull === true) r.storeFull = undefined
    return r
  }

  consume(entries: readonly ConsumeEntry[], nowMs: number): readonly AlgorithmResult[] {
    const n = entries.length
    if (this.results.length > n) this.results.length = n
    if (n === 1) {
      // One rule: the algorithm's own commit is already all-or-nothing.
      const e = entries[0]!
      const t = this.table(e.rule)
      const slot = this.slotFor(t, e.key, nowMs, e.cost)
      if (slot < 0) {
        this.storeFull(t, e, nowMs, this.result(0))
        return this.results
      }
      const r = this.result(0)
      // A full queue: decide without recording, and record only an admission without a wait.
      const full = e.queueFull === true
      const off = slot * t.stride
      t.algorithm.consume(t.slab, off, t.params, e.cost, nowMs, e.maxWaitMs, slot > 0 && !full, r)
      if (full) {
        refuseReservation(r)
        if (r.allowed && slot > 0) {
          t.algorithm.consume(t.slab, off, t.params, e.cost, nowMs, e.maxWaitMs, true, r)
        }
      }
      return this.results
    }
    const tables: RuleTable[] = new Array<RuleTable>(n)
    const slots: number[] = new Array<number>(n)
    let gate = true
    this.pinCount = 0
    try {
      for (let i = 0; i < n; i++) {
        const e = entries[i]!
        const t = (tables[i] = this.table(e.rule))
        const slot = (slots[i] = this.slotFor(t, e.key, nowMs, e.cost))
        const r = this.result(i)
        if (slot < 0) {
          this.storeFull(t, e, nowMs, r)
        } else {
          if (slot > 0) {
            this.pinTables[this.pinCount] = t
            this.pinSlots[this.pinCount++] = slot
          }
          t.algorithm.consume(
            t.slab,
            slot * t.stride,
            t.params,
            e.cost,
            nowMs,
            e.maxWaitMs,
            false,
            r,
          )
          if (e.queueFull === true) refuseReservation(r)
        }
        if (!e.shadow && !r.allowed) gate = false
      }
    } finally {
      this.pinCount = 0
      this.pinTables.length = 0
    }
    if (!gate) return this.results
    for (let i = 0; i < n; i++) {
      const e = entries[i]!
      // Slot 0 is the fresh state a cost-0 entry read: nothing to record.
      if (slots[i]! <= 0 || (e.shadow && !this.results[i]!.allowed)) continue
      const t = tables[i]!
      t.algorithm.consume(
        t.slab,
        slots[i]! * t.stride,
        t.params,
        e.cost,
        nowMs,
        e.maxWaitMs,
        true,
        this.results[i]!,
      )
    }
    return this.results
  }

  refund(entries: readonly RefundEntry[], nowMs: number): void {
    for (const e of entries) {
      const t = this.table(e.rule)
      const slot = t.find(e.key)
      if (slot < 0) continue
      t.algorithm.refund(t.slab, slot * t.stride, t.params, e.cost, nowMs)
      t.touched(e.key, slot)
    }
  }

  /**
   * Charge `cost` units to one client's state unconditionally: the state may go into debt,
   * and the client is refused until it is paid back at the rule's refill rate. This is how a
   * SyncedStore applies the units other hosts admitted.
   *
   * @param rule - The compiled rule whose state is charged.
   * @param key - The client key.
   * @param cost - Units to charge (positive).
   * @param nowMs - The current time in epoch milliseconds.
   * @throws OptionsError when the rule's algorithm cannot carry debt (only token bucket and
   * GCRA can).
   */
  charge(rule: CompiledRule, key: string, cost: number, nowMs: number): void {
    this.charged(rule, key, cost, nowMs)
  }

  /** {@link MemoryStore.charge}, answering whether the units were recorded. */
  private charged(rule: CompiledRule, key: string, cost: number, nowMs: number): boolean {
    const t = this.table(rule)
    if (!t.algorithm.charge) throw unchargeableRule(rule)
    const slot = this.slotFor(t, key, nowMs)
    // Full of non-fresh state: this key has no state here, and requests from it are refused
    // until room frees, so the charge has nothing to add to until then.
    if (slot < 0) return false
    t.algorithm.charge(t.slab, slot * t.stride, t.params, cost, nowMs)
    return true
  }

  /** Each entry's state as a request of cost 0 would find it; nothing changes. */
  peek(entries: readonly StateEntry[], nowMs: number): AlgorithmResult[] {
    return entries.map((e) => {
      const t = this.table(e.rule)
      const found = t.find(e.key)
      const out = newResult()
      // Slot 0 always holds the fresh state: a key with no state reads as fresh.
      const slot = found < 0 ? 0 : found
      t.algorithm.consume(t.slab, slot * t.stride, t.params, 0, nowMs, 0, false, out)
      return out
    })
  }

  /** Forget each entry's state. */
  reset(entries: readonly StateEntry[]): void {
    for (const e of entries) {
      const t = this.table(e.rule)
      const slot = t.find(e.key)
      if (slot < 0) continue
      t.remove(e.key, slot)
      this.keyCount--
    }
  }

  /**
   * Charge each entry's units into debt (see {@link MemoryStore.charge}). Unlike `charge`, a
   * penalty (or a ban) is not dropped in silence when the store is full: the caller is told,
   * so a ban that has no room is not announced as started.
   * @throws OptionsError for a rule whose algorithm cannot carry debt; nothing is charged then.
   * @throws FloodgateError `FG_ERR_STORE_FULL` when a client with no state of the rule found
   * the store full of state that is not fresh (the entries that had room are charged).
   */
  penalize(entries: readonly RefundEntry[], nowMs: number): void {
    checkChargeable(entries)
    let dropped = 0
    for (const e of entries) if (!this.charged(e.rule, e.key, e.cost, nowMs)) dropped++
    if (dropped > 0) {
      throw new FloodgateError(
        'FG_ERR_STORE_FULL',
        `MemoryStore is full (maxKeys ${this.maxKeys}) of state that is not fresh: ${dropped} of ${entries.length} charges had no room and were not recorded`,
      )
    }
  }

  retain(stateIds: ReadonlySet<string>): void {
    for (const [id, t] of this.tables) {
      if (stateIds.has(id)) continue
      this.keyCount -= t.index.size
      this.tables.delete(id)
    }
    this.lastRule = undefined
    this.lastTable = undefined
  }

  close(): void {
    this.tables.clear()
    this.keyCount = 0
    this.lastRule = undefined
    this.lastTable = undefined
  }
}
