import {
  newResult,
  type Algorithm,
  type AlgorithmParams,
  type AlgorithmResult,
} from '../algorithms/algorithm.js'
import { OptionsError } from '../errors.js'
import type { CompiledRule } from '../rules/compiled-rules.js'
import type { ConsumeEntry, RefundEntry, Store } from './store.js'

/** Options of {@link MemoryStore}. */
export interface MemoryStoreOptions {
  /**
   * Hard cap on keys across all rules. Under a flood of random keys the store evicts idle
   * state first, then state of clients that still have room; a client over its limit is never
   * evicted. When nothing can be evicted, new keys of a rule share one overflow state.
   * Kept well below V8's Map ceiling of 2^24 entries (P7).
   * @default 1_000_000
   */
  readonly maxKeys?: number | undefined
}

const MAP_CEILING = 2 ** 24 - 1
// How many entries a new key may inspect, at most, to find room under pressure.
const PRESSURE_SCAN = 32
// How many entries each new key sweeps for idle state, so cleanup keeps pace with inserts.
const SWEEP_PER_INSERT = 2
// The background sweep leaves state alone until it has been idle this long: a busy client of a
// fast-refilling rule is idle between its own requests, and dropping and re-creating its state
// every time would be pure churn. Under pressure, idle state goes first regardless.
const SWEEP_GRACE_MS = 60_000

/**
 * State of one rule: key → slot in a packed Float64Array (a stride of the algorithm's state
 * size per slot), so a key costs its Map entry plus a few numbers, not an object.
 */
class RuleTable {
  readonly index = new Map<string, number>()
  readonly stride: number
  slab: Float64Array
  private readonly freeSlots: number[] = []
  private nextSlot = 1 // slot 0 is the overflow state shared by keys that found no room
  private sweep: Iterator<[string, number]> | undefined

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
    return slot
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

  /** Whether evicting the slot could not free a throttled client: it still has room for a unit. */
  private hasRoom(slot: number, nowMs: number, probe: AlgorithmResult): boolean {
    this.algorithm.consume(this.slab, slot * this.stride, this.params, 1, nowMs, 0, false, probe)
    return probe.allowed
  }

  /** Remove up to `budget` idle entries met by the sweep; returns how many were removed. */
  sweepIdle(budget: number, nowMs: number): number {
    let removed = 0
    for (let i = 0; i < budget; i++) {
      const e = this.nextEntry()
      if (!e) break
      if (this.isIdle(e[1], nowMs, SWEEP_GRACE_MS)) {
        this.remove(e[0], e[1])
        removed++
      }
    }
    return removed
  }

  /** Under pressure: evict one idle entry, else one that still has room; false when none found. */
  evictOne(nowMs: number, probe: AlgorithmResult): boolean {
    let candidate: [string, number] | undefined
    for (let i = 0; i < PRESSURE_SCAN; i++) {
      const e = this.nextEntry()
      if (!e) break
      if (this.isIdle(e[1], nowMs)) {
        this.remove(e[0], e[1])
        return true
      }
      if (!candidate && this.hasRoom(e[1], nowMs, probe)) candidate = e
    }
    if (!candidate) return false
    this.remove(candidate[0], candidate[1])
    return true
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
  private readonly probe = newResult()
  private keyCount = 0
  private evictions = 0
  // One-entry cache of the last rule's table: most requests hit the same rule again.
  private lastRule: CompiledRule | undefined
  private lastTable: RuleTable | undefined
  /** Requests whose key found no room and shared a rule's overflow state. */
  overflowed = 0

  constructor(options: MemoryStoreOptions = {}) {
    const maxKeys = options.maxKeys ?? 1_000_000
    if (!Number.isInteger(maxKeys) || maxKeys < 1 || maxKeys > MAP_CEILING) {
      throw new OptionsError(
        `MemoryStore maxKeys: expected an integer from 1 to ${MAP_CEILING}, got ${String(maxKeys)}`,
      )
    }
    this.maxKeys = maxKeys
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

  private slotFor(t: RuleTable, key: string, nowMs: number): number {
    const found = t.find(key)
    if (found >= 0) return found
    const swept = t.sweepIdle(SWEEP_PER_INSERT, nowMs)
    if (swept > 0) {
      this.keyCount -= swept
      this.evictions++
    }
    if (this.keyCount >= this.maxKeys && !this.makeRoom(t, nowMs)) {
      this.overflowed++
      return 0
    }
    this.keyCount++
    return t.allocate(key)
  }

  /** Evict from the rule's own table first, then from the others. */
  private makeRoom(t: RuleTable, nowMs: number): boolean {
    this.evictions++
    if (t.evictOne(nowMs, this.probe)) {
      this.keyCount--
      return true
    }
    for (const other of this.tables.values()) {
      if (other !== t && other.evictOne(nowMs, this.probe)) {
        this.keyCount--
        return true
      }
    }
    return false
  }

  private result(i: number): AlgorithmResult {
    let r = this.results[i]
    if (!r) {
      r = newResult()
      this.results[i] = r
    }
    return r
  }

  consume(entries: readonly ConsumeEntry[], nowMs: number): readonly AlgorithmResult[] {
    const n = entries.length
    if (this.results.length > n) this.results.length = n
    if (n === 1) {
      // One rule: the algorithm's own commit is already all-or-nothing.
      const e = entries[0]!
      const t = this.table(e.rule)
      const slot = this.slotFor(t, e.key, nowMs)
      t.algorithm.consume(
        t.slab,
        slot * t.stride,
        t.params,
        e.cost,
        nowMs,
        e.maxWaitMs,
        true,
        this.result(0),
      )
      return this.results
    }
    const tables: RuleTable[] = new Array<RuleTable>(n)
    const slots: number[] = new Array<number>(n)
    let gate = true
    const evictionsBefore = this.evictions
    for (let i = 0; i < n; i++) {
      const e = entries[i]!
      const t = (tables[i] = this.table(e.rule))
      const slot = (slots[i] = this.slotFor(t, e.key, nowMs))
      const r = this.result(i)
      t.algorithm.consume(t.slab, slot * t.stride, t.params, e.cost, nowMs, e.maxWaitMs, false, r)
      if (!e.shadow && !r.allowed) gate = false
    }
    if (!gate) return this.results
    // A later entry's eviction may have freed an earlier entry's slot: look those up again.
    const recheck = this.evictions !== evictionsBefore
    for (let i = 0; i < n; i++) {
      const e = entries[i]!
      if (e.shadow && !this.results[i]!.allowed) continue
      const t = tables[i]!
      if (recheck && slots[i] !== 0 && t.find(e.key) !== slots[i])
        slots[i] = this.slotFor(t, e.key, nowMs)
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
      if (slot >= 0) t.algorithm.refund(t.slab, slot * t.stride, t.params, e.cost, nowMs)
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
    const t = this.table(rule)
    if (!t.algorithm.charge) {
      throw new OptionsError(
        `rule ${rule.rule.id}: algorithm ${t.algorithm.name} cannot be charged units into debt (token-bucket and gcra can)`,
      )
    }
    const slot = this.slotFor(t, key, nowMs)
    t.algorithm.charge(t.slab, slot * t.stride, t.params, cost, nowMs)
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
