import { newResult, type AlgorithmResult } from '../algorithms/algorithm.js'
import type { Clock } from '../clock.js'
import { FloodgateError } from '../errors.js'
import { isThenable } from '../limiter-deadline.js'
import { invalidAnswer, validResults } from '../limiter-decide.js'
import type { ConsumeEntry, RefundEntry, StateEntry, Store } from '../stores/store.js'
import type { AdaptiveGate } from './adaptive-gate.js'
import { isAdaptive, type AdaptiveGates } from './adaptive-gates.js'
import type { StateGeneration } from '../limiter-state-generations.js'

type Answer = readonly AlgorithmResult[] | Promise<readonly AlgorithmResult[]>

/** An entry as the limiter sends it: with the life of its state then (`Entry.generation`). */
type Stamped = ConsumeEntry & { readonly generation?: StateGeneration | undefined }

/** Whether an adaptive entry's rule is background traffic, shed first. */
function background(e: StateEntry): boolean {
  return e.rule.rule.adaptive?.priority === 'background'
}

function gateOf(gates: AdaptiveGates, e: StateEntry): AdaptiveGate {
  const gate = gates.gateOf(e.rule)
  // Rules reach the store through the limiter, which prepares every rule set it compiles.
  if (!gate) {
    throw new FloodgateError(
      'FG_ERR_STORE_ANSWER_INVALID',
      `adaptive rule ${e.rule.rule.id} has no gate: compiled outside this limiter`,
    )
  }
  return gate
}

/**
 * Every member of {@link Store}, each of which the wrapper must carry over from the store it
 * wraps: a capability it forgets is one the limiter silently loses (`get` and `reset` stop
 * finding what other hosts recorded, say). Adding a member to `Store` fails to compile here
 * until it is listed, and the test wraps a store with all of them.
 */
export const STORE_MEMBERS = [
  'synchronous',
  'settlesWithinMs',
  'consume',
  'refund',
  'peek',
  'reset',
  'penalize',
  'recordLimits',
  'recordedLimits',
  'retain',
  'close',
] as const
const onlyMembers: readonly (keyof Store)[] = STORE_MEMBERS
void onlyMembers
type Unlisted = Exclude<keyof Store, (typeof STORE_MEMBERS)[number]>
const everyMemberListed: [Unlisted] extends [never] ? true : Unlisted = true
void everyMemberListed

/**
 * The store the limiter talks to: adaptive entries are decided by their gates on this host,
 * everything else by the store given (memory, Redis). A request's rules stay all-or-nothing:
 *
 * - when an enforced adaptive entry refuses, the other entries are asked at cost 0, so they
 *   report their state and nothing is charged;
 * - otherwise the store decides the others, and the adaptive slots are taken only when every
 *   enforced one of them admitted; if a gate filled up meanwhile (an asynchronous store's
 *   round trip), the units the store charged are given back and the request is refused.
 *
 * Slots come back through `refund`, the path every concurrency slot takes (release, a queued
 * client leaving, an answer that came after the deadline).
 */
export class AdaptiveStore implements Store {
  /** The store given to the limiter, which decides every rule but the adaptive ones. */
  readonly wrapped: Store
  readonly synchronous?: boolean
  readonly settlesWithinMs?: number
  readonly peek?: Store['peek']
  readonly reset?: Store['reset']
  readonly penalize?: Store['penalize']
  readonly recordLimits?: Store['recordLimits']
  readonly recordedLimits?: Store['recordedLimits']
  readonly retain?: Store['retain']
  readonly close?: Store['close']
  /** The answer of a request that one adaptive rule decides alone, reused like MemoryStore's. */
  private readonly oneResult = newResult()
  private readonly one: AlgorithmResult[] = [this.oneResult]

  /**
   * @param clock - the limiter's clock, read when a store's answer arrives: a gate decides an
   *   answer at its arrival, never at the time it was asked (see `mixed`)
   */
  constructor(
    private readonly inner: Store,
    private readonly gates: AdaptiveGates,
    private readonly clock: Clock,
  ) {
    this.wrapped = inner
    if (inner.synchronous !== undefined) this.synchronous = inner.synchronous
    if (inner.settlesWithinMs !== undefined) this.settlesWithinMs = inner.settlesWithinMs
    if (inner.peek) this.peek = (entries, nowMs) => this.peekEntries(entries, nowMs)
    if (inner.reset) {
      const reset = inner.reset.bind(inner)
      // A client's share of a host's gate is not state to forget: only the others are reset.
      this.reset = (entries, nowMs) => reset(this.storeEntries(entries), nowMs)
    }
    if (inner.penalize) this.penalize = inner.penalize.bind(inner)
    if (inner.recordLimits) this.recordLimits = inner.recordLimits.bind(inner)
    if (inner.recordedLimits) this.recordedLimits = inner.recordedLimits.bind(inner)
    if (inner.retain) this.retain = inner.retain.bind(inner)
    if (inner.close) this.close = inner.close.bind(inner)
  }

  consume(entries: readonly ConsumeEntry[], nowMs: number): Answer {
    if (!this.gates.any) return this.inner.consume(entries, nowMs)
    const n = entries.length
    let adaptive = 0
    for (let i = 0; i < n; i++) if (isAdaptive(entries[i]!.rule)) adaptive++
    if (adaptive === 0) return this.inner.consume(entries, nowMs)
    if (n === 1) {
      // The common case: one adaptive rule, no store call at all.
      const e = entries[0]!
      const out = this.oneResult
      gateOf(this.gates, e).decide(e.key, e.cost, nowMs, true, out, e.rule.rule.id, background(e))
      return this.one
    }
    return this.mixed(entries, nowMs)
  }

  private mixed(entries: readonly ConsumeEntry[], nowMs: number): Answer {
    const n = entries.length
    const results = new Array<AlgorithmResult>(n)
    const others: ConsumeEntry[] = []
    const at: number[] = []
    let refused = false
    for (let i = 0; i < n; i++) {
      const e = entries[i]!
      if (!isAdaptive(e.rule)) {
        others.push(e)
        at.push(i)
        continue
      }
      const r = newResult()
      gateOf(this.gates, e).decide(e.key, e.cost, nowMs, false, r, e.rule.rule.id, background(e))
      results[i] = r
      if (!r.allowed && !e.shadow) refused = true
    }
    // Every entry adaptive: an admitted request takes its slots in the second look.
    if (others.length === 0)
      return refused ? results : this.takeSlots(entries, results, [], [], nowMs)
    // Refused anyway: the other rules only report their state, charging nothing.
    const asked = refused ? others.map((e) => ({ ...e, cost: 0, maxWaitMs: 0 })) : others
    const answer = this.inner.consume(asked, nowMs)
    const merge = (a: readonly AlgorithmResult[], atMs: number): readonly AlgorithmResult[] => {
      // Checked as the limiter checks it, before any slot is taken: an answer the limiter
      // would then refuse (and fail open on) must not leave slots taken behind it.
      if (!validResults(a, asked)) throw invalidAnswer(a, asked)
      let othersAdmit = true
      for (let j = 0; j < others.length; j++) {
        const r = { ...a[j]! }
        const e = others[j]!
        // The limiter reports what remained before a refused request: the cost comes back.
        if (refused) r.remaining = Math.max(0, r.remaining - e.cost)
        else if (!r.allowed && !e.shadow) othersAdmit = false
        results[at[j]!] = r
      }
      if (refused || !othersAdmit) return results
      return this.takeSlots(entries, results, others, a, atMs)
    }
    // An answer that comes later (after the limiter's deadline even) takes its slots now, and
    // the gate reads the clock now: an older reading, after readings since, would tell the
    // gate the clock went back.
    return isThenable(answer)
      ? Promise.resolve(answer).then((a) => merge(a, this.clock()))
      : merge(answer, nowMs)
  }

  /**
   * The store admitted the others: decide the adaptive entries again, taking their slots (two
   * rules sharing a gate may both fit at the first look, each without the other's slots). A
   * gate that filled up since the first look refuses, and the store's charges are given back.
   */
  private takeSlots(
    entries: readonly ConsumeEntry[],
    results: AlgorithmResult[],
    others: readonly ConsumeEntry[],
    answer: readonly AlgorithmResult[],
    nowMs: number,
  ): readonly AlgorithmResult[] {
    const taken: ConsumeEntry[] = []
    let refused = false
    for (let i = 0; i < entries.length; i++) {
      const e = entries[i]!
      if (!isAdaptive(e.rule)) continue
      // Decided again and taken at once: this second look is the verdict, whatever the first
      // one said (a shadow entry the first look refused may fit now, and then holds a slot).
      const r = results[i]!
      gateOf(this.gates, e).decide(e.key, e.cost, nowMs, true, r, e.rule.rule.id, background(e))
      if (r.allowed) taken.push(e)
      else if (!e.shadow) refused = true
    }
    if (!refused) return results
    for (const e of taken) gateOf(this.gates, e).release(e.key, e.cost, e.rule.rule.id)
    // Each with the name its store gave the slot, if any: a release frees that slot only. Not
    // what was charged in a state the store dropped since (a rules swap while it decided): see
    // `Holdings.stamp`.
    const charged: RefundEntry[] = []
    others.forEach((e, j) => {
      const r = answer[j]!
      if (r.allowed && (e as Stamped).generation?.dropped !== true) {
        charged.push({ rule: e.rule, key: e.key, cost: e.cost, lease: r.lease })
      }
    })
    if (charged.length > 0) {
      try {
        void Promise.resolve(this.inner.refund(charged, nowMs)).catch(() => {})
      } catch {
        // The refusal stands: a store that cannot give a charge back keeps it, as it would have
        // had the request been refused by the store itself.
      }
    }
    return results
  }

  refund(entries: readonly RefundEntry[], nowMs: number): void | Promise<void> {
    if (entries.length === 1) {
      // A request's one slot: the common release.
      const e = entries[0]!
      if (!isAdaptive(e.rule)) return this.inner.refund(entries, nowMs)
      this.gates.gateOf(e.rule)?.release(e.key, e.cost, e.rule.rule.id)
      return
    }
    // No adaptive rule was ever prepared, so none of these entries is one.
    if (!this.gates.any) return this.inner.refund(entries, nowMs)
    let rest: RefundEntry[] | undefined
    for (let i = 0; i < entries.length; i++) {
      const e = entries[i]!
      if (isAdaptive(e.rule)) this.gates.gateOf(e.rule)?.release(e.key, e.cost, e.rule.rule.id)
      else (rest ??= []).push(e)
    }
    if (rest === undefined) return
    return this.inner.refund(rest.length === entries.length ? entries : rest, nowMs)
  }

  private storeEntries<E extends StateEntry>(entries: readonly E[]): readonly E[] {
    return entries.some((e) => isAdaptive(e.rule))
      ? entries.filter((e) => !isAdaptive(e.rule))
      : entries
  }

  private peekEntries(entries: readonly StateEntry[], nowMs: number): Answer {
    const rest = this.storeEntries(entries)
    const answer = rest.length > 0 ? this.inner.peek!(rest, nowMs) : []
    const merge = (a: readonly AlgorithmResult[], atMs: number): readonly AlgorithmResult[] => {
      if (rest === entries) return a
      let j = 0
      return entries.map((e) => {
        if (!isAdaptive(e.rule)) return a[j++]!
        const r = newResult()
        gateOf(this.gates, e).peek(atMs, r)
        return r
      })
    }
    return isThenable(answer)
      ? Promise.resolve(answer).then((a) => merge(a, this.clock()))
      : merge(answer, nowMs)
  }
}
