import type { AlgorithmResult } from './algorithms/algorithm.js'
import type { Clock } from './clock.js'
import type { Decision } from './decision.js'
import {
  isThenable,
  isTimeout,
  withinDeadline,
  withTimeout,
  type DeadlineHandlers,
  type DeadlineWatchdog,
} from './limiter-deadline.js'
import {
  applyBanChecks,
  banFailed,
  bannedDecision,
  recordRefusals,
  withBanChecks,
} from './limiter-ban.js'
import { FAILED_OPEN, invalidAnswer, judge, judgeOne, validResults } from './limiter-decide.js'
import type { Entry } from './limiter-entry.js'
import { FAIL_OPEN_MESSAGES, type FailOpenCode, type FailOpenLog } from './limiter-fail-open-log.js'
import type { Holdings } from './limiter-holdings.js'
import type { DecisionReport } from './limiter-report.js'
import type { TopClientsTracker } from './limiter-top-clients.js'
import type { RequestFacts } from './request-facts.js'
import type { Store } from './stores/store.js'
import type { HeldEntry } from './limiter-state-generations.js'

/**
 * One entry whose rule neither bans nor queues, the common request: there is no ban check to
 * add, no queue to mark before the store call and none to join after it (validResults bounds
 * the store's wait by the entry's maxWaitMs of 0), so those three steps are not called (about
 * 190 instructions per decision, callgrind).
 */
function plainLone(entries: readonly Entry[]): boolean {
  if (entries.length !== 1) return false
  const one = entries[0]!
  return !one.rule.ban && one.maxWaitMs <= 0
}

/** What one store round trip works with: the limiter's parts, shared by reference. */
export interface RoundTripParts<Req> {
  readonly store: Store
  readonly clock: Clock
  readonly timeoutMs: number
  /** Set when the store settles every call within `decisionTimeoutMs` itself (`settlesWithinMs`). */
  readonly watchdog: DeadlineWatchdog | undefined
  readonly holdings: Holdings
  readonly top: TopClientsTracker | undefined
  readonly failOpenLog: FailOpenLog
  /** Where a failure to count a refusal for a ban is told (throttled). */
  readonly banLog: FailOpenLog
  readonly reporter: DecisionReport<Req>
}

/**
 * From entries whose limits are chosen to a reported decision: one store call within the
 * deadline, the decision, bans, and passing the request unjudged when the store fails.
 */
export class RoundTrip<Req> {
  /** Set by the limiter's close(): no store call is made any more. */
  closed = false

  constructor(readonly parts: RoundTripParts<Req>) {}

  /** Ask the store about the entries (and their rules' ban checks), then decide. */
  decideEntries(
    entries: Entry[],
    reuse: boolean,
    facts: RequestFacts<Req> | undefined,
  ): Decision | Promise<Decision> {
    // A closed limiter has no store to ask: the request passes unjudged, like a store failure.
    if (this.closed) return this.failOpen(undefined, entries, facts, 'FG_WRN_LIMITER_CLOSED')
    const { store, reporter } = this.parts
    const plain = plainLone(entries)
    const bans = plain ? undefined : withBanChecks(entries)
    const asked = bans ? bans.all : entries
    if (!plain) this.parts.holdings.markFullQueues(entries)
    this.parts.holdings.stamp(entries)
    let results: readonly AlgorithmResult[] | Promise<readonly AlgorithmResult[]>
    // Store timings only when an observer asks for them: no clock read otherwise.
    const startedMs = reporter.timeStore ? performance.now() : -1
    const nowMs = this.parts.clock()
    try {
      results = store.consume(asked, nowMs)
    } catch (err) {
      if (startedMs >= 0) reporter.storeCallEnded(startedMs, false)
      return this.failOpen(err, entries, facts)
    }
    if (isThenable(results)) {
      // A store that broke its `synchronous` promise must not see its entries reused.
      const own = reuse ? entries.map((e) => ({ ...e })) : entries
      // Promise.resolve turns a foreign thenable into a promise that cannot throw at us.
      return withinDeadline<Decision>(
        Promise.resolve(results),
        this.parts.timeoutMs,
        this.parts.watchdog,
        new AwaitedDecision(this, own, facts, bans?.owners, nowMs, startedMs),
      )
    }
    if (startedMs >= 0) reporter.storeCallEnded(startedMs, true)
    return this.decide(entries, results, facts, bans?.owners, nowMs)
  }

  /**
   * `decideEntries` for the one entry of `Limiter.judgeLone` (a rule with nothing but a limit,
   * a synchronous store, scratch entries): the same store call and decision, without the steps
   * that have nothing to do for it (bans, queues, holdings, store timing: a synchronous store
   * is never timed).
   */
  decideLone(entries: Entry[], facts: RequestFacts<Req>): Decision | Promise<Decision> {
    if (this.closed) return this.failOpen(undefined, entries, facts, 'FG_WRN_LIMITER_CLOSED')
    const parts = this.parts
    const nowMs = parts.clock()
    let results: readonly AlgorithmResult[] | Promise<readonly AlgorithmResult[]>
    try {
      results = parts.store.consume(entries, nowMs)
    } catch (err) {
      return this.failOpen(err, entries, facts)
    }
    if (isThenable(results)) {
      // A store that broke its `synchronous` promise must not see its entries reused.
      return withinDeadline<Decision>(
        Promise.resolve(results),
        parts.timeoutMs,
        parts.watchdog,
        new AwaitedDecision(this, [{ ...entries[0]! }], facts, undefined, nowMs, -1),
      )
    }
    if (!validResults(results, entries)) {
      return this.failOpen(invalidAnswer(results, entries), entries, facts)
    }
    const decision = judgeOne(entries[0]!, results[0]!, nowMs)
    this.noteRefusals(decision)
    return parts.reporter.report(decision, facts)
  }

  /**
   * The store answered after the deadline and the request already passed unjudged: give back
   * the concurrency slots it recorded, or they would stay taken until their lease expires.
   */
  undoLateAnswer(entries: Entry[], results: readonly AlgorithmResult[]): void {
    if (!validResults(results, entries)) return
    const { holdings } = this.parts
    const slots: HeldEntry[] = []
    entries.forEach((e, i) => {
      const r = results[i]!
      if (e.rule.algorithm.name === 'concurrency' && r.allowed)
        slots.push(holdings.held(e, r.lease))
    })
    if (slots.length > 0 && entries.every((e, i) => e.shadow || results[i]?.allowed)) {
      holdings.refund(slots)
    }
  }

  decide(
    entries: Entry[],
    answer: readonly AlgorithmResult[],
    facts: RequestFacts<Req> | undefined,
    banOwners: readonly number[] | undefined,
    nowMs: number,
  ): Decision | Promise<Decision> {
    if (!validResults(answer, entries, banOwners?.length)) {
      const err = invalidAnswer(answer, entries, banOwners?.length)
      return this.failOpen(err, entries, facts)
    }
    let results = answer
    let banned: readonly boolean[] | undefined
    if (banOwners) ({ results, banned } = applyBanChecks(answer, entries.length, banOwners))
    if (!plainLone(entries)) results = this.parts.holdings.joinQueues(entries, results)
    const decision = judge(entries, results, banned, nowMs)
    this.parts.holdings.settle(decision, entries, results)
    this.noteRefusals(decision)
    if (decision.allowed || !banOwners) return this.parts.reporter.report(decision, facts)
    return this.startBans(decision, entries, results, facts, nowMs)
  }

  /** Tell the top-clients tracker, when there is one, of each rule that refused this client. */
  private noteRefusals(decision: Decision): void {
    const top = this.parts.top
    if (top === undefined) return
    const outcomes = decision.outcomes
    for (let i = 0; i < outcomes.length; i++) {
      const o = outcomes[i]!
      // Enforced refusals and shadow would-be refusals; a queued outcome is allowed.
      if (!o.allowed) top.refused(o.rule.id, o.key)
    }
  }

  /** Count the refusals of banning rules; the refusal that earns a ban answers as banned. */
  private startBans(
    decision: Decision,
    entries: readonly Entry[],
    results: readonly AlgorithmResult[],
    facts: RequestFacts<Req> | undefined,
    nowMs: number,
  ): Decision | Promise<Decision> {
    const { reporter, banLog } = this.parts
    // Copies: the entry objects may be reused by the next check.
    const own = entries.map((e) => ({ ...e }))
    let earned: number[] | Promise<number[]> | undefined
    try {
      earned = recordRefusals(this.parts.store, own, decision.outcomes, results, nowMs)
    } catch (err) {
      banFailed(banLog, err)
      return reporter.report(decision, facts)
    }
    if (earned === undefined) return reporter.report(decision, facts)
    if (!isThenable(earned)) return reporter.report(bannedDecision(decision, own, earned), facts)
    // An answer that cannot be read (a hostile store's) fails the bans, not the request.
    return withTimeout(earned, this.parts.timeoutMs)
      .then((e) => reporter.report(bannedDecision(decision, own, e), facts))
      .catch((err: unknown) => {
        banFailed(banLog, err)
        return reporter.report(decision, facts)
      })
  }

  /** Let the request pass unjudged: free the queue places taken, count it, log (throttled). */
  failOpen(
    err: unknown,
    entries: readonly Entry[],
    facts: RequestFacts<Req> | undefined,
    code: FailOpenCode = 'FG_WRN_STORE_FAILED_OPEN',
    fields?: Record<string, unknown>,
  ): Decision {
    for (const e of entries) {
      e.rt.counts.failedOpen++
      if (e.place !== undefined) {
        this.parts.holdings.leavePlace(e.place)
        e.place = undefined
      }
    }
    this.parts.failOpenLog.warn({ err, code, ...fields }, FAIL_OPEN_MESSAGES[code])
    return this.parts.reporter.report(FAILED_OPEN, facts)
  }
}

/**
 * A decision waiting on an asynchronous store: what the answer, a failure or a late answer
 * needs, in one object per call (timed in its handlers: a promise more per call would cost more
 * than the timing).
 */
class AwaitedDecision<Req> implements DeadlineHandlers<Decision> {
  constructor(
    private readonly trip: RoundTrip<Req>,
    private readonly entries: Entry[],
    private readonly facts: RequestFacts<Req> | undefined,
    private readonly banOwners: readonly number[] | undefined,
    private readonly nowMs: number,
    /** When the store call started (`performance.now()`), or -1 when not timed. */
    private readonly startedMs: number,
  ) {}

  answered(r: readonly AlgorithmResult[]): Decision | Promise<Decision> {
    if (this.startedMs >= 0) this.trip.parts.reporter.storeCallEnded(this.startedMs, true)
    return this.trip.decide(this.entries, r, this.facts, this.banOwners, this.nowMs)
  }

  failed(err: unknown): Decision {
    if (this.startedMs >= 0 && !isTimeout(err)) {
      this.trip.parts.reporter.storeCallEnded(this.startedMs, false)
    }
    return this.trip.failOpen(err, this.entries, this.facts)
  }

  late(r: readonly AlgorithmResult[]): void {
    if (this.startedMs >= 0) this.trip.parts.reporter.storeCallEnded(this.startedMs, true)
    const own = this.entries
    if (this.banOwners !== undefined) {
      // A banned client was charged nothing: there is nothing to give back.
      if (!validResults(r, own, this.banOwners.length)) return
      if (r.slice(own.length).some((b) => !b.allowed)) return
      this.trip.undoLateAnswer(own, r.slice(0, own.length))
    } else {
      this.trip.undoLateAnswer(own, r)
    }
  }
}
