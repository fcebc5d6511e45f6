import type { CompiledRule } from './rules/compiled-rules.js'
import type { ConsumeEntry, RefundEntry } from './stores/store.js'
import type { RuleRuntime } from './limiter-rules.js'
import { allowedByRule } from './limiter-rule-lists.js'
import type { RequestFacts } from './request-facts.js'

/** A store entry plus the rule's runtime, so the decision needs no second lookup. */
export interface Entry extends ConsumeEntry {
  rule: CompiledRule
  key: string
  cost: number
  maxWaitMs: number
  shadow: boolean
  rt: RuleRuntime
  /** The queue place taken before asking the store, so concurrent checks cannot overfill it. */
  place: string | undefined
}

/** A copy of what the store needs to give an entry back: entry objects may be reused. */
export function refundOf(e: Entry): RefundEntry {
  return { rule: e.rule, key: e.key, cost: e.cost }
}

/** A unit count the store can charge: a finite, non-negative number. */
export function isCost(v: unknown): v is number {
  return typeof v === 'number' && v >= 0 && v <= Number.MAX_VALUE
}

export function describeAnswer(v: unknown): string {
  if (Array.isArray(v)) return `an array of ${v.length}`
  return v === null ? 'null' : typeof v
}

/** The queue places a request takes while its entries are built (the limiter's holdings). */
export interface QueuePlaces {
  /** A place in the rule's queue for this client, or undefined when the queue is full. */
  takePlace(rule: CompiledRule, key: string, maxQueue: number): string | undefined
  leavePlace(place: string): void
}

/** An entry whose limit a limit function is still choosing. */
export interface PendingPick {
  readonly index: number
  readonly pick: Promise<CompiledRule>
}

/**
 * One store entry per rule that has a key for this request and does not allow-list the client, counted against the limit chosen
 * for it (tiers, a limit function); returns how many. An entry whose limit comes from a
 * promise keeps the rule's own until `pending` is settled.
 */
export function fillEntries<Req>(
  entries: Entry[],
  rts: readonly RuleRuntime[],
  facts: RequestFacts<Req>,
  routeCost: number,
  reuse: boolean,
  holdings: QueuePlaces,
  pending: PendingPick[],
): number {
  let n = 0
  for (let i = 0; i < rts.length; i++) {
    const rt = rts[i]!
    let key: string | undefined
    let picked: CompiledRule | Promise<CompiledRule> = rt.compiled
    try {
      // A client on the rule's allow list is not counted by it.
      key = allowedByRule(rt, facts) ? undefined : rt.keyFn(facts)
      if (key !== undefined && rt.pick !== undefined) picked = rt.pick(facts)
    } catch (err) {
      // Give back the queue places this request took so far; stale scratch entries past n
      // belong to earlier requests.
      for (let j = 0; j < n; j++) {
        const place = entries[j]!.place
        if (place !== undefined) holdings.leavePlace(place)
      }
      throw err
    }
    if (key === undefined) continue
    const rule = rt.compiled.rule
    let maxWaitMs = 0
    let place: string | undefined
    if (rule.onLimit.action === 'queue') {
      place = holdings.takePlace(rt.compiled, key, rule.onLimit.maxQueue)
      if (place !== undefined) maxWaitMs = rule.onLimit.maxWaitMs
    }
    const cost = rule.cost * routeCost
    let chosen = rt.compiled
    if (picked instanceof Promise) pending.push({ index: n, pick: picked })
    else chosen = picked
    const e = entries[n]
    if (reuse && e) {
      e.rule = chosen
      e.key = key
      e.cost = cost
      e.maxWaitMs = maxWaitMs
      e.shadow = rule.shadow
      e.rt = rt
      e.place = place
    } else {
      entries[n] = { rule: chosen, key, cost, maxWaitMs, shadow: rule.shadow, rt, place }
    }
    n++
  }
  return n
}
