import type { CompiledRule } from './rules/compiled-rules.js'
import type { ConsumeEntry } from './stores/store.js'
import type { RuleRuntime } from './limiter-rules.js'
import type { StateGeneration } from './limiter-state-generations.js'
import { allowedByRule } from './limiter-rule-lists.js'
import { queueWaitMs } from './limiter-queue-wait.js'
import type { RequestFacts } from './request-facts.js'

/** A store entry plus the rule's runtime, so the decision needs no second lookup. */
export interface Entry extends ConsumeEntry {
  rule: CompiledRule
  key: string
  cost: number
  maxWaitMs: number
  /** Set just before the store call for an entry that queues (see `Holdings.markFullQueues`). */
  queueFull?: boolean
  shadow: boolean
  rt: RuleRuntime
  /**
   * The queue place the request holds: taken when the store's answer makes it wait (see
   * `Holdings.joinQueues`), never before, so a request whose answer is still on its way holds none.
   */
  place: string | undefined
  /**
   * The life of the entry's state when the request was sent to the store, for a store that
   * drops the state of rules that leave (see `Holdings.stamp`): what the store records for the
   * request is recorded in that life, and nothing goes back once it is over. Undefined when
   * nothing can drop the state, or the request holds nothing.
   */
  generation: StateGeneration | undefined
}

/** A unit count the store can charge: a finite, non-negative number. */
export function isCost(v: unknown): v is number {
  return typeof v === 'number' && v >= 0 && v <= Number.MAX_VALUE
}

/**
 * The most units one entry is charged: 2^53, above every capacity a rule can have (limits and
 * bursts are safe integers). A dearer request, such as a route cost computed from what the
 * client sent, is refused whatever its size; unbounded, `rule.cost × route cost` could overflow
 * to Infinity, or a finite 1e308 units at 5 a minute would wait Infinity ms, an answer no store
 * may give, and either way the request would pass unjudged (fail-open).
 */
export const MAX_CHARGE: number = 2 ** 53

/**
 * The units one entry is charged for a request of `units` on a rule costing `ruleCost` each.
 *
 * @param ruleCost - the rule's own cost (a positive safe number)
 * @param units - the route's or caller's cost, already checked with {@link isCost}
 * @returns their product, at most {@link MAX_CHARGE}
 */
export function chargeOf(ruleCost: number, units: number): number {
  const charge = ruleCost * units
  return charge < MAX_CHARGE ? charge : MAX_CHARGE
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
  pending: PendingPick[],
): number {
  let n = 0
  for (let i = 0; i < rts.length; i++) {
    const rt = rts[i]!
    // A client on the rule's allow list is not counted by it.
    const key = allowedByRule(rt, facts) ? undefined : rt.keyFn(facts)
    if (key === undefined) continue
    let chosen = rt.compiled
    // Only a rule that picks its limit asks whether the pick is a promise (an instanceof).
    if (rt.pick !== undefined) {
      const picked = rt.pick(facts)
      if (picked instanceof Promise) pending.push({ index: n, pick: picked })
      else chosen = picked
    }
    const rule = rt.compiled.rule
    const maxWaitMs = queueWaitMs(rule)
    const cost = chargeOf(rule.cost, routeCost)
    const e = entries[n]
    if (reuse && e) {
      e.rule = chosen
      e.key = key
      e.cost = cost
      e.maxWaitMs = maxWaitMs
      e.shadow = rule.shadow
      e.rt = rt
      e.place = undefined
    } else {
      entries[n] = {
        rule: chosen,
        key,
        cost,
        maxWaitMs,
        shadow: rule.shadow,
        rt,
        place: undefined,
        generation: undefined,
      }
    }
    n++
  }
  return n
}
