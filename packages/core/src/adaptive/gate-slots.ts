/** Below this, what is left of a count is floating-point residue of fractional costs: none. */
const RESIDUE = 1e-9
/** Keys at 0 the map may hold beyond a few per holder before they are swept. */
const IDLE_KEYS = 1024
/** Keys the map may hold per client holding slots before the idle ones are swept. */
const KEYS_PER_HOLDER = 4

/**
 * The slots an adaptive gate holds: in total, per client key, and per rule. They are the
 * requests the host is running, a fact that outlives the gate's settings: a rules swap that
 * changes a rule's settings gives its new gate these same slots, so the requests admitted
 * before the swap still count against the limit and still come back when they end.
 *
 * Memory is bounded by the clients holding slots: a key whose last request ended stays at 0
 * (deleting and re-adding a key on every request costs more) until the map holds
 * `4 × holders + 1024` keys, when the idle ones are swept; so it never holds more (each sweep
 * is paid for by the takes or releases since the last one).
 */
export class GateSlots {
  private total = 0
  private readonly held = new Map<string, number>()
  /** Keys in `held` with slots (the clients the fair share is divided among). */
  private holding = 0
  /** Slots per rule id, for a gate several rules share (their counters are per rule). */
  private readonly byRule: Map<string, number> | undefined

  /** @param perRule - count the slots per rule too (a gate rules share); a gate of one rule need not */
  constructor(perRule: boolean) {
    this.byRule = perRule ? new Map<string, number>() : undefined
  }

  /** Slots (cost units) held in all. */
  get inFlight(): number {
    return this.total
  }

  /** Client keys holding slots. */
  get holders(): number {
    return this.holding
  }

  /** Keys the per-client map holds, idle ones included: bounded by {@link GateSlots}. */
  get trackedKeys(): number {
    return this.held.size
  }

  /** Slots `key` holds. */
  of(key: string): number {
    return this.held.get(key) ?? 0
  }

  /** Slots the requests of rule `ruleId` hold; all of them on a gate of one rule. */
  ofRule(ruleId: string): number {
    return this.byRule === undefined ? this.total : (this.byRule.get(ruleId) ?? 0)
  }

  /**
   * Take `cost` slots for `key` under `ruleId`. A request of cost 0 holds nothing: it must
   * not make its client a holder, or the client would stay one after it ended.
   */
  take(key: string, cost: number, ruleId: string): void {
    if (!(cost > 0)) return
    this.total += cost
    const byRule = this.byRule
    if (byRule !== undefined) byRule.set(ruleId, (byRule.get(ruleId) ?? 0) + cost)
    const mine = this.held.get(key) ?? 0
    if (mine === 0) {
      this.holding++
      if (this.held.size >= KEYS_PER_HOLDER * this.holding + IDLE_KEYS) this.sweep()
    }
    this.held.set(key, mine + cost)
  }

  /**
   * Give back `cost` slots of `key` under `ruleId`. Every count stays at 0 or above whatever
   * is given back: a release never frees slots other requests hold.
   */
  release(key: string, cost: number, ruleId: string): void {
    if (!(cost > 0)) return
    this.total = down(this.total, cost)
    const byRule = this.byRule
    const ofRule = byRule?.get(ruleId)
    if (ofRule !== undefined) byRule!.set(ruleId, down(ofRule, cost))
    const had = this.held.get(key)
    if (had === undefined || had === 0) return
    const mine = down(had, cost)
    this.held.set(key, mine)
    if (mine === 0) {
      this.holding--
      // Swept here too: after a burst of clients ends, the map shrinks with them.
      if (this.held.size >= KEYS_PER_HOLDER * this.holding + IDLE_KEYS) this.sweep()
    }
  }

  private sweep(): void {
    for (const [key, n] of this.held) if (n === 0) this.held.delete(key)
    const byRule = this.byRule
    if (byRule !== undefined) for (const [id, n] of byRule) if (n === 0) byRule.delete(id)
  }
}

function down(from: number, by: number): number {
  const left = from - by
  return left > RESIDUE ? left : 0
}
