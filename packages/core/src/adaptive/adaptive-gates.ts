import { RulesValidationError } from '../errors.js'
import type { CompiledRule } from '../rules/compiled-rules.js'
import type { RefundEntry } from '../stores/store.js'
import { AdaptiveGate } from './adaptive-gate.js'
import type { AdaptiveState } from './adaptive-state.js'
import { SKETCH_PACKAGE, sketchFactory } from './latency-sketch.js'

/**
 * Whether a compiled rule is an adaptive rule's own state, decided by its gate on this host and
 * never by a store. The states derived from an adaptive rule (its ban's refusals and block)
 * carry the same rule but are kept by the store like any other rule's.
 */
export function isAdaptive(rule: CompiledRule): boolean {
  return rule.rule.algorithm === 'adaptive' && rule.algorithm.name === 'concurrency'
}

/**
 * The gates of one limiter's adaptive rules. A gate lives as long as its rule is in force
 * unchanged (same id, settings and key), so a rules swap that keeps the rule keeps its limit,
 * its baseline and its requests in flight. A swap that changes the rule's settings (or key)
 * starts a new limit and baseline, but the requests in flight are still the host's: the new
 * gate takes over the old one's slots. A rule that left the set and came back later starts
 * afresh; the requests of the rule that left give their slots back to its own gate.
 */
export class AdaptiveGates {
  /** Gates in force, by what makes a gate the same across rule sets. */
  private live = new Map<string, AdaptiveGate>()
  /** The gate of each compiled rule, kept for the requests of a rule swapped out meanwhile. */
  private readonly byRule = new WeakMap<CompiledRule, AdaptiveGate>()
  private byId = new Map<string, AdaptiveGate>()
  /** The gate looked up last: most requests ask for the rule the previous one asked for. */
  private lastRule: CompiledRule | undefined
  private lastGate: AdaptiveGate | undefined

  /**
   * Whether this limiter ever prepared an adaptive rule: until then, the store's hot path
   * checks nothing else. Not whether one is in force: a request matched before a swap took its
   * adaptive rule away (its limit function answering meanwhile) is still decided by its gate.
   */
  get any(): boolean {
    return this.prepared
  }
  private prepared = false

  /**
   * Give each adaptive rule of a set its gate (the one in force when the rule did not change).
   * @throws RulesValidationError when the set has an adaptive rule and the sketch package is
   *   not installed, before anything changes
   */
  prepare(
    rules: readonly CompiledRule[],
    label: string,
    inForce: readonly CompiledRule[] = [],
  ): void {
    const adaptive = rules.filter(isAdaptive)
    if (adaptive.length === 0) return
    this.prepared = true
    const newSketch = sketchFactory()
    if (!newSketch) {
      const i = rules.indexOf(adaptive[0]!)
      throw new RulesValidationError([
        `${label}[${i}].algorithm: 'adaptive' measures latency with the '${SKETCH_PACKAGE}' package, an optional peer dependency that is not installed: npm install ${SKETCH_PACKAGE}`,
      ])
    }
    // Rules naming one gate share it, whichever set they are in (the global rules, a route's):
    // they must agree on what the gate is.
    const named = new Map<string, { readonly id: string; readonly where: string }>()
    for (const c of inForce) {
      const name = isAdaptive(c) ? c.rule.adaptive!.gate : undefined
      if (name === undefined || named.has(name)) continue
      named.set(name, { id: identity(c), where: `rule ${JSON.stringify(c.rule.id)} in force` })
    }
    const issues: string[] = []
    for (const c of adaptive) {
      const name = c.rule.adaptive!.gate
      if (name === undefined) continue
      const at = rules.indexOf(c)
      const first = named.get(name)
      if (first === undefined) named.set(name, { id: identity(c), where: `${label}[${at}]` })
      else if (first.id !== identity(c)) {
        issues.push(
          `${label}[${at}].adaptive.gate: rules sharing gate ${JSON.stringify(name)} need the same key and settings (but priority) as ${first.where}`,
        )
      }
    }
    if (issues.length > 0) throw new RulesValidationError(issues)
    // The gates in force by owner (rule id, or gate name), whatever their settings.
    const owned = new Map<string, AdaptiveGate>()
    for (const [id, gate] of this.live) owned.set(ownerOf(id), gate)
    const fresh = new Map<string, AdaptiveGate>()
    for (const c of adaptive) {
      if (this.byRule.has(c)) continue
      const id = identity(c)
      let gate = fresh.get(id) ?? this.live.get(id)
      if (gate === undefined) {
        const name = c.rule.adaptive!.gate ?? c.rule.id
        gate = new AdaptiveGate(name, c.rule.adaptive!, newSketch, owned.get(ownerOf(id)))
      }
      fresh.set(id, gate)
      this.byRule.set(c, gate)
    }
  }

  /** After a swap: the gates of these rules are the ones in force. */
  retain(rules: readonly CompiledRule[]): void {
    const live = new Map<string, AdaptiveGate>()
    const byId = new Map<string, AdaptiveGate>()
    for (const c of rules) {
      const gate = this.byRule.get(c)
      if (!gate) continue
      live.set(identity(c), gate)
      byId.set(c.rule.id, gate)
    }
    const kept = new Set(live.values())
    for (const gate of kept) {
      const before = gate.predecessor
      if (before === undefined) continue
      // Only now is the replacement in force (a set refused after prepare() changes nothing).
      if (!kept.has(before)) before.successor = gate
      gate.predecessor = undefined
    }
    this.live = live
    this.byId = byId
    this.lastRule = undefined
    this.lastGate = undefined
  }

  /**
   * The gate that decides for a compiled adaptive rule: its own, or the one that replaced it in
   * force; undefined for a rule never prepared.
   */
  gateOf(rule: CompiledRule): AdaptiveGate | undefined {
    if (rule === this.lastRule) return this.lastGate
    let gate = this.byRule.get(rule)
    while (gate?.successor !== undefined) gate = gate.successor
    if (gate !== undefined) {
      this.lastRule = rule
      this.lastGate = gate
    }
    return gate
  }

  /** Feed a response's latency to the gates of the adaptive slots it held. */
  sample(slots: readonly RefundEntry[], latencyMs: number, nowMs: number): void {
    for (let i = 0; i < slots.length; i++) {
      const rule = slots[i]!.rule
      if (isAdaptive(rule)) this.gateOf(rule)?.record(latencyMs, nowMs)
    }
  }

  /** The live state of the adaptive rule `ruleId` in force; undefined when there is none. */
  state(ruleId: string, nowMs: number): AdaptiveState | undefined {
    return this.byId.get(ruleId)?.state(nowMs)
  }

  /** Add the slots each adaptive rule in force holds now to `into` (by rule id). */
  addInFlight(into: Map<string, number>): Map<string, number> {
    for (const [id, gate] of this.byId) {
      // A shared gate's slots are told apart by rule; a gate of one rule's are all its rule's.
      const n = gate.slots.ofRule(id)
      if (n > 0) into.set(id, (into.get(id) ?? 0) + n)
    }
    return into
  }

  /** The ids of the adaptive rules in force. */
  ruleIds(): string[] {
    return [...this.byId.keys()]
  }
}

/**
 * What makes two compiled rules share a gate: the same id, settings and key; for rules naming a
 * gate, the same gate name, settings (but priority) and key.
 */
function identity(c: CompiledRule): string {
  const a = c.rule.adaptive!
  const settings = JSON.stringify({ ...a, priority: undefined })
  // Rule ids and gate names cannot hold '|' or '\u0000'.
  if (a.gate !== undefined) return `gate:${a.gate}\u0000${c.rule.key.join(',')}|${settings}`
  return `rule:${c.rule.id}\u0000${c.stateId}|${c.rule.key.join(',')}|${settings}`
}

/** The rule id or gate name of an identity: what a gate's slots belong to across settings. */
function ownerOf(identity: string): string {
  return identity.slice(0, identity.indexOf('\u0000'))
}
