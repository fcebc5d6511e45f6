import type { AlgorithmResult } from '../algorithms/algorithm.js'
import type { CompiledRule } from '../rules/compiled-rules.js'
import type { RuleTier } from '../rules/rule.js'

/** One rule to decide for one key within a request. */
export interface ConsumeEntry {
  readonly rule: CompiledRule
  /** The client key (already bounded in length by core). */
  readonly key: string
  readonly cost: number
  /**
   * Reservation allowed up to this wait (the rule queues); else 0. Whether the client's queue
   * has room is the limiter's concern: it gives the reservation back when it has none.
   */
  readonly maxWaitMs: number
  /**
   * The client's queue for this rule had no free place when the request was sent: answer as
   * with `maxWaitMs`, but refuse a request that would have to wait instead of reserving for it
   * (see `refuseReservation`), so that no reservation is taken only to be given back. A store
   * that ignores it stays correct: the limiter then gives the reservation back.
   */
  readonly queueFull?: boolean | undefined
  /** Shadow entries are decided and recorded but never gate the request. */
  readonly shadow: boolean
}

/** Something to give back: a concurrency slot, or a reservation a queued client abandoned. */
export interface RefundEntry {
  readonly rule: CompiledRule
  readonly key: string
  readonly cost: number
  /**
   * The slot being released, as the store named it when it admitted the request
   * (`AlgorithmResult.lease`); a store that names none leaves it undefined.
   */
  readonly lease?: number | undefined
}

/** One client's state of one rule, for the operations that are not a request. */
export interface StateEntry {
  readonly rule: CompiledRule
  readonly key: string
}

/**
 * Where limiter state lives. One `consume` call decides every rule of a request at once:
 *
 * - every entry is evaluated against its own state;
 * - when every non-shadow entry is allowed (possibly with a reservation), all non-shadow
 *   entries are recorded, and so is each shadow entry that allowed on its own;
 * - otherwise nothing at all is recorded: a refused request leaves no rule charged.
 *
 * The result has one `AlgorithmResult` per entry, in order. A store may answer
 * synchronously (MemoryStore: no promise on the hot path) or with a promise (Redis); callers
 * must not keep the result array past the next call, since synchronous stores reuse it.
 */
export interface Store {
  /**
   * Declares that `consume` always answers synchronously and keeps no reference to `entries`
   * after it returns, so the limiter may reuse its entry objects (MemoryStore).
   */
  readonly synchronous?: boolean
  /**
   * Declares that every promise `consume` returns settles within this many milliseconds on
   * its own (rejecting when its backend misses the deadline), as RedisStore's does (its
   * `callTimeoutMs`). When it is no longer than the limiter's `decisionTimeoutMs`, the limiter
   * arms no timer of its own per call; a shared sweep fails a call still unsettled after twice
   * `decisionTimeoutMs`, so a store that breaks the promise delays requests but never hangs
   * them.
   */
  readonly settlesWithinMs?: number
  consume(
    entries: readonly ConsumeEntry[],
    nowMs: number,
  ): readonly AlgorithmResult[] | Promise<readonly AlgorithmResult[]>
  refund(entries: readonly RefundEntry[], nowMs: number): void | Promise<void>
  /**
   * Read each entry's state without changing it: the answer a request of cost 0 would get
   * (`remaining`, `limit`, `resetMs`; a refusal only while the state is in debt). Optional:
   * `limiter.get()` needs it.
   */
  peek?(
    entries: readonly StateEntry[],
    nowMs: number,
  ): readonly AlgorithmResult[] | Promise<readonly AlgorithmResult[]>
  /**
   * Forget each entry's state: the client starts afresh. Optional: `limiter.reset()` and
   * rules with a `ban` need it.
   */
  reset?(entries: readonly StateEntry[], nowMs: number): void | Promise<void>
  /**
   * Charge each entry's `cost` units unconditionally, past the capacity if need be (the state
   * goes into debt, paid back at the rule's refill rate). Only algorithms with `charge` (token
   * bucket, GCRA) can be charged; a store throws for the others before charging any entry
   * (all or nothing, see `checkChargeable`). Optional: `limiter.penalty()` and rules with a
   * `ban` need it.
   */
  penalize?(entries: readonly RefundEntry[], nowMs: number): void | Promise<void>
  /**
   * Remember that a rule's limit function (the limiter's `limits` option) answered these
   * limits: a state of the rule's own that clients may be counted under. Called once per new
   * answer and host. A store shared by several hosts keeps them where every host reads them
   * back with `recordedLimits`, so `limiter.reset` and `get` on one host find the states an
   * answer on another host made. Optional: without it, a limiter knows its own answers only.
   */
  recordLimits?(ruleStateId: string, limits: RuleTier): void | Promise<void>
  /** The limits recorded for the rule (by `ruleStateId`) by every host. Optional, with `recordLimits`. */
  recordedLimits?(ruleStateId: string): readonly RuleTier[] | Promise<readonly RuleTier[]>
  /** Drop the state of rules whose `stateId` is no longer in force (after a rules swap). Optional. */
  retain?(stateIds: ReadonlySet<string>): void
  /** Release connections and timers. */
  close?(): void | Promise<void>
}
