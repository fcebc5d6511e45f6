import type { AlgorithmResult } from './algorithms/algorithm.js'
import { turnClock, type Clock } from './clock.js'
import type { Decision } from './decision.js'
import { FloodgateError } from './errors.js'
import { addCounts, zeroCounts, type CountersSnapshot } from './limiter-counters.js'
import { DeadlineWatchdog, withinDeadline } from './limiter-deadline.js'
import {
  ALLOW_LISTED,
  FAILED_OPEN,
  NO_RULES,
  UNMATCHED,
  judge,
  listedRefusal,
  validResults,
} from './limiter-decide.js'
import { CompiledAccessList } from './lists/access-list.js'
import {
  describeAnswer,
  fillEntries,
  isCost,
  refundOf,
  type Entry,
  type PendingPick,
} from './limiter-entry.js'
import { FAIL_OPEN_MESSAGES, FailOpenLog, type FailOpenCode } from './limiter-fail-open-log.js'
import { Holdings } from './limiter-holdings.js'
import type { LimiterObserver } from './limiter-observer.js'
import {
  findRule,
  getState,
  keyFor,
  penalize,
  resetState,
  reward as giveBack,
  type ClientRuleOptions,
  type ClientState,
  type ClientStateContext,
  type LimitOptions,
} from './limiter-client-state.js'
import type { ClientKey } from './keys/build-key.js'
import {
  applyBanChecks,
  banFailed,
  bannedDecision,
  recordRefusals,
  withBanChecks,
} from './limiter-ban.js'
import { RuleRegistry } from './limiter-rules.js'
import { TopClientsTracker, type TopClient, type TopClientsQuery } from './limiter-top-clients.js'
import { scopeLogger, stderrLogger, type Logger } from './logger.js'
import {
  checkFunction,
  checkFunctionMap,
  checkLogger,
  checkMethods,
  checkObject,
  checkOneOf,
  checkPositiveInt,
  optionError,
  refusedOption,
} from './options/checks.js'
import type { RequestFacts } from './request-facts.js'
import type { CompiledRules } from './rules/compiled-rules.js'
import type { Rule } from './rules/rule.js'
import { parseRules, type RuleInput } from './rules/schema.js'
import type { RulesSource } from './rules/sources/rules-source.js'
import { MemoryStore } from './stores/memory-store.js'
import type { Store } from './stores/store.js'
import type { Limiter, LimiterOptions, RequestOutcome } from './limiter-types.js'

export type { Limiter, LimiterOptions } from './limiter-types.js'

function isRulesSource(x: unknown): x is RulesSource {
  return (
    typeof x === 'object' &&
    x !== null &&
    typeof (x as RulesSource).start === 'function' &&
    typeof (x as RulesSource).stop === 'function'
  )
}

/** The deadline passed before the store answered: not an answer to time (a late one is). */
function isTimeout(err: unknown): boolean {
  return err instanceof FloodgateError && err.code === 'FG_ERR_STORE_TIMEOUT'
}

/**
 * A limit function for a rule id no static rule has is most likely a typo; it is kept (route
 * rules compiled later may have the id) but said once.
 */
function warnUnknownLimits(
  limits: Readonly<Record<string, unknown>> | undefined,
  rules: readonly Rule[],
  logger: Logger,
): void {
  if (!limits) return
  const ids = new Set(rules.map((r) => r.id))
  for (const id of Object.keys(limits)) {
    if (!ids.has(id)) {
      logger.warn(
        { code: 'FG_WRN_LIMIT_INVALID', rule: id },
        `limits.${id}: no rule has this id; the function is used only if a rule with it comes later`,
      )
    }
  }
}

function isThenable<T>(x: T | Promise<T>): x is Promise<T> {
  return typeof x === 'object' && x !== null && typeof (x as { then?: unknown }).then === 'function'
}

/** `pending`, or a rejection once `ms` have passed without an answer. */
function withTimeout<T>(pending: Promise<T>, ms: number): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const timer = setTimeout(
      () =>
        reject(new FloodgateError('FG_ERR_STORE_TIMEOUT', `store did not answer within ${ms} ms`)),
      ms,
    )
    Promise.resolve(pending).then(
      (v) => {
        clearTimeout(timer)
        resolve(v)
      },
      (err: unknown) => {
        clearTimeout(timer)
        reject(err instanceof Error ? err : new Error(String(err)))
      },
    )
  })
}

/**
 * Create a limiter.
 *
 * @param options - rules or a rules source, store, key builders, clock, deadline, logger
 * @returns the limiter
 * @throws OptionsError for bad options, RulesValidationError for bad static rules
 * @example
 * const limiter = createLimiter({
 *   rules: [{ id: 'per-ip', limit: 100, window: '1m' }],
 * })
 * const decision = limiter.check({ method: 'GET', path: '/', ip: '203.0.113.7', headers: {} })
 */
export function createLimiter<Req = unknown>(options: LimiterOptions<Req> = {}): Limiter<Req> {
  return new LimiterEngine(options)
}

class LimiterEngine<Req> implements Limiter<Req> {
  private readonly store: Store
  private readonly clock: Clock
  private readonly timeoutMs: number
  /** What `limit`, `get`, `reset`, `penalty` and `reward` work with. */
  private readonly clientState: ClientStateContext
  private readonly logger: Logger
  private readonly onDecision: LimiterOptions<Req>['onDecision']
  private readonly source: RulesSource | undefined
  private readonly registry: RuleRegistry<Req>
  private readonly holdings: Holdings
  private readonly failOpenLog: FailOpenLog
  private readonly top: TopClientsTracker | undefined
  /** Observers by what they want, so the request path checks one array length per concern. */
  private queueObservers: readonly LimiterObserver[] = []
  private storeObservers: readonly LimiterObserver[] = []
  /**
   * Whether to time store calls: someone asks, and the store is asynchronous (a synchronous
   * store answers within the call, so timing it would cost more than it tells).
   */
  private timeStore = false
  private readonly total = zeroCounts()
  private readonly scratch: Entry[] = []
  /** Limits still being chosen, filled and emptied within one check (no array per request). */
  private readonly pendingScratch: PendingPick[] = []
  private busy = false
  /** Set when the store settles every call within our `timeoutMs` itself (`settlesWithinMs`). */
  private readonly watchdog: DeadlineWatchdog | undefined
  private readonly denyList: CompiledAccessList | undefined
  private readonly allowList: CompiledAccessList | undefined
  private readonly denied: Decision
  private readonly unmatched: Decision

  readonly ready: Promise<void>

  constructor(options: LimiterOptions<Req>) {
    checkObject('options', options)
    const o = options ?? {}
    this.store = o.store === undefined ? new MemoryStore() : o.store
    checkMethods('store', this.store, ['consume', 'refund'])
    this.clock = checkFunction('clock', o.clock) ?? turnClock
    this.timeoutMs = checkPositiveInt('timeoutMs', o.timeoutMs, 50)
    const bound = this.store.settlesWithinMs
    this.watchdog =
      typeof bound === 'number' && bound <= this.timeoutMs
        ? new DeadlineWatchdog(this.timeoutMs)
        : undefined
    const ipv6Subnet = checkPositiveInt('ipv6Subnet', o.ipv6Subnet, 64, 128)
    const failOpenLogIntervalMs = checkPositiveInt(
      'failOpenLogIntervalMs',
      o.failOpenLogIntervalMs,
      10_000,
    )
    checkLogger('logger', o.logger)
    this.logger = scopeLogger(o.logger)
    this.onDecision = checkFunction('onDecision', o.onDecision)
    checkFunctionMap('keys', o.keys)
    checkFunctionMap('limits', o.limits)
    const rules: unknown = o.rules
    if (rules !== undefined && !Array.isArray(rules) && !isRulesSource(rules)) {
      throw optionError('rules', 'an array of rules or a RulesSource', rules)
    }
    this.denyList = CompiledAccessList.compile('deny', o.deny, o.keys ?? {})
    this.allowList = CompiledAccessList.compile('allow', o.allow, o.keys ?? {})
    this.denied = listedRefusal(
      checkOneOf('denyStatus', o.denyStatus, 403, [403, 404, 429, 503] as const),
      'deny-list',
    )
    this.unmatched =
      checkOneOf('unmatched', o.unmatched, 'allow', ['allow', 'reject'] as const) === 'reject'
        ? listedRefusal(503, 'unmatched')
        : UNMATCHED
    this.failOpenLog = new FailOpenLog(this.logger, this.clock, failOpenLogIntervalMs)
    const limitLog = new FailOpenLog(this.logger, this.clock, failOpenLogIntervalMs)
    this.registry = new RuleRegistry(this.store, o.keys ?? {}, ipv6Subnet, {
      functions: o.limits ?? {},
      timeoutMs: this.timeoutMs,
      problem: (reason, fields) =>
        limitLog.warn(
          { code: 'FG_WRN_LIMIT_INVALID', ...fields },
          `${reason}; the rule's own limit applied`,
        ),
    })
    this.holdings = new Holdings(this.store, this.clock, this.logger)
    this.clientState = {
      store: this.store,
      ipv6Subnet,
      clock: this.clock,
      runtimes: () => this.registry.allRuntimes(),
    }
    this.top = o.topClients === false ? undefined : new TopClientsTracker(o.topClients)
    if (isRulesSource(rules)) {
      this.source = rules
      // A host that cannot load or apply its rules must say so even when nobody passed a
      // logger: then these few lines go to stderr. A failed load is a warning (the last good
      // rules stay in force); a refused set is an error (someone must change the rules or the
      // host's key builders).
      const log = o.logger === undefined ? stderrLogger : this.logger
      this.ready = rules.start(
        (next, revision) => this.applySource(next, revision, log),
        (err) =>
          log.warn(
            { err, code: 'FG_ERR_RULES_SOURCE' },
            'rules source failed; keeping the rules in force',
          ),
        () => log.info({}, 'rules source recovered'),
      )
    } else {
      this.source = undefined
      if (rules !== undefined) {
        const parsed = parseRules(rules)
        this.install(parsed)
        warnUnknownLimits(o.limits, parsed, this.logger)
      }
      this.ready = Promise.resolve()
    }
  }

  get rules(): readonly Rule[] {
    return this.registry.rules
  }

  private applySource(next: Rule[], revision: string | undefined, log: Logger): void {
    try {
      this.install(next)
      log.info({ revision, rules: next.length }, 'rules updated')
    } catch (err) {
      const code = (err as { code?: unknown }).code
      log.error({ err, code, revision }, 'rules refused; keeping the rules in force')
    }
  }

  updateRules(rules: readonly RuleInput[]): void {
    this.install(parseRules(rules))
  }

  compileRules(rules: readonly RuleInput[]): CompiledRules {
    return this.registry.addRouteSet(parseRules(rules))
  }

  private install(rules: readonly Rule[]): void {
    this.registry.install(rules)
    this.top?.keepOnly(this.registry.ruleIds())
  }

  // ---- the hot path -------------------------------------------------------------------

  check(facts: RequestFacts<Req>): Decision | Promise<Decision> {
    // check() never throws: whatever goes wrong outside the store (hostile facts, a key builder
    // that throws) lets the request pass unjudged, like a store failure.
    try {
      return this.judgeRequest(facts)
    } catch (err) {
      return this.failOpen(err, [], facts, 'FG_WRN_CHECK_FAILED_OPEN')
    }
  }

  private judgeRequest(facts: RequestFacts<Req>): Decision | Promise<Decision> {
    // Before any matching or counting: a denied client costs no store call.
    if (this.denyList?.has(facts)) return this.report(this.denied, facts)
    if (this.allowList?.has(facts)) return this.report(ALLOW_LISTED, facts)
    const registry = this.registry
    const matched = registry.compiled.match(facts)
    let rts = matched.length === 0 ? undefined : registry.runtimesFor(matched)
    if (facts.routeRules) {
      const extra = facts.routeRules.match(facts)
      if (extra.length > 0) {
        const more = registry.runtimesFor(extra)
        rts = rts ? rts.concat(more) : more
      }
    }
    if (!rts) return this.report(this.unmatched, facts)

    const routeCost: unknown = facts.cost === undefined ? 1 : facts.cost
    if (!isCost(routeCost)) {
      // Counting it would refund (negative) or poison the state (NaN, Infinity): refuse to count.
      return this.failOpen(undefined, [], facts, 'FG_WRN_COST_INVALID', { cost: routeCost })
    }

    // A synchronous store keeps nothing past its call: reuse the entry objects.
    const reuse = this.store.synchronous === true && !this.busy
    const entries: Entry[] = reuse ? this.scratch : []
    const pending = this.pendingScratch
    pending.length = 0
    let n: number
    try {
      n = fillEntries(entries, rts, facts, routeCost, reuse, this.holdings, pending)
    } catch (err) {
      return this.failOpen(err, [], facts, 'FG_WRN_CHECK_FAILED_OPEN')
    }
    if (n === 0) return this.report(NO_RULES, facts)
    if (entries.length !== n) entries.length = n
    if (pending.length > 0) {
      // A limit function answers later: the scratch entries may serve other requests meanwhile.
      const own = reuse ? entries.map((e) => ({ ...e })) : entries
      const waits = pending.splice(0)
      // Picks never reject: a failed or late answer is the rule's own limit.
      return Promise.all(
        waits.map((p) =>
          p.pick.then((rule) => {
            own[p.index]!.rule = rule
          }),
        ),
      )
        .then(() => this.consumeEntries(own, facts, false))
        .catch((err: unknown) => this.failOpen(err, own, facts, 'FG_WRN_CHECK_FAILED_OPEN'))
    }
    return this.consumeEntries(entries, facts, reuse)
  }

  /** Ask the store about entries whose limits are chosen, and decide. */
  private consumeEntries(
    entries: Entry[],
    facts: RequestFacts<Req>,
    reuse: boolean,
  ): Decision | Promise<Decision> {
    const n = entries.length
    for (let i = 0; i < n; i++) {
      const cost = entries[i]!.cost
      if (!isCost(cost)) {
        return this.failOpen(undefined, entries, facts, 'FG_WRN_COST_INVALID', { cost })
      }
    }

    return this.decideEntries(entries, reuse, facts)
  }

  /** Ask the store about the entries (and their rules' ban checks), then decide. */
  private decideEntries(
    entries: Entry[],
    reuse: boolean,
    facts: RequestFacts<Req> | undefined,
  ): Decision | Promise<Decision> {
    const bans = withBanChecks(entries)
    const asked = bans ? bans.all : entries
    let results: readonly AlgorithmResult[] | Promise<readonly AlgorithmResult[]>
    // Store timings only when an observer asks for them: no clock read otherwise.
    const startedMs = this.timeStore ? performance.now() : -1
    const nowMs = this.clock()
    try {
      results = this.store.consume(asked, nowMs)
    } catch (err) {
      if (startedMs >= 0) this.storeCallEnded(startedMs, false)
      return this.failOpen(err, entries, facts)
    }
    if (isThenable(results)) {
      // A store that broke its `synchronous` promise must not see its entries reused.
      const own = reuse ? entries.map((e) => ({ ...e })) : entries
      // Promise.resolve turns a foreign thenable into a promise that cannot throw at us.
      // Timed in the handlers themselves: a promise more per call would cost more than the timing.
      return withinDeadline<Decision>(Promise.resolve(results), this.timeoutMs, this.watchdog, {
        answered: (r) => {
          if (startedMs >= 0) this.storeCallEnded(startedMs, true)
          return this.decide(own, r, facts, bans?.owners, nowMs)
        },
        failed: (err) => {
          if (startedMs >= 0 && !isTimeout(err)) this.storeCallEnded(startedMs, false)
          return this.failOpen(err, own, facts)
        },
        late: (r) => {
          if (startedMs >= 0) this.storeCallEnded(startedMs, true)
          // A banned client was charged nothing: there is nothing to give back.
          if (bans && !validResults(r, bans.all.length)) return
          if (bans && r.slice(own.length).some((b) => !b.allowed)) return
          this.undoLateAnswer(own, bans ? r.slice(0, own.length) : r)
        },
      })
    }
    if (startedMs >= 0) this.storeCallEnded(startedMs, true)
    // decide() may run onDecision, which may call check() again: keep the scratch ours until then.
    this.busy = reuse
    try {
      return this.decide(entries, results, facts, bans?.owners, nowMs)
    } finally {
      if (reuse) this.busy = false
    }
  }

  /**
   * The store answered after the deadline and the request already passed unjudged: give back
   * the concurrency slots it recorded, or they would stay taken until their lease expires.
   */
  private undoLateAnswer(entries: Entry[], results: readonly AlgorithmResult[]): void {
    if (!validResults(results, entries.length)) return
    const slots = entries
      .filter((e, i) => e.rule.algorithm.name === 'concurrency' && results[i]?.allowed === true)
      .map(refundOf)
    if (slots.length > 0 && entries.every((e, i) => e.shadow || results[i]?.allowed)) {
      this.holdings.refund(slots)
    }
  }

  private decide(
    entries: Entry[],
    answer: readonly AlgorithmResult[],
    facts: RequestFacts<Req> | undefined,
    banOwners: readonly number[] | undefined,
    nowMs: number,
  ): Decision | Promise<Decision> {
    const asked = entries.length + (banOwners?.length ?? 0)
    if (!validResults(answer, asked)) {
      const err = new FloodgateError(
        'FG_ERR_STORE_ANSWER_INVALID',
        `store answered ${describeAnswer(answer)} for ${asked} entries; expected one result per entry`,
      )
      return this.failOpen(err, entries, facts)
    }
    let results = answer
    let banned: readonly boolean[] | undefined
    if (banOwners) ({ results, banned } = applyBanChecks(answer, entries.length, banOwners))
    const decision = judge(entries, results, banned)
    this.holdings.settle(decision, entries)
    const top = this.top
    if (top !== undefined) {
      const outcomes = decision.outcomes
      for (let i = 0; i < outcomes.length; i++) {
        const o = outcomes[i]!
        // Enforced refusals and shadow would-be refusals; a queued outcome is allowed.
        if (!o.allowed) top.refused(o.rule.id, o.key)
      }
    }
    if (decision.allowed || !banOwners) return this.report(decision, facts)
    return this.startBans(decision, entries, facts, nowMs)
  }

  /** Count the refusals of banning rules; the refusal that earns a ban answers as banned. */
  private startBans(
    decision: Decision,
    entries: readonly Entry[],
    facts: RequestFacts<Req> | undefined,
    nowMs: number,
  ): Decision | Promise<Decision> {
    // Copies: the entry objects may be reused by the next check.
    const own = entries.map((e) => ({ ...e }))
    let earned: number[] | Promise<number[]> | undefined
    try {
      earned = recordRefusals(this.store, own, decision.outcomes, nowMs)
    } catch (err) {
      banFailed(this.logger, err)
      return this.report(decision, facts)
    }
    if (earned === undefined) return this.report(decision, facts)
    if (!isThenable(earned)) return this.report(bannedDecision(decision, own, earned), facts)
    return withTimeout(earned, this.timeoutMs).then(
      (e) => this.report(bannedDecision(decision, own, e), facts),
      (err: unknown) => {
        banFailed(this.logger, err)
        return this.report(decision, facts)
      },
    )
  }

  private report(decision: Decision, facts: RequestFacts<Req> | undefined): Decision {
    const t = this.total
    if (decision.failedOpen) t.failedOpen++
    else if (decision.action === 'allow') t.allowed++
    else if (decision.action === 'queue') t.queued++
    else if (decision.action === 'drop') t.dropped++
    else t.rejected++
    if (decision.action === 'queue' && this.queueObservers.length > 0) {
      this.notifyQueued(decision.rule?.id ?? '', decision.waitMs)
    }
    const reason = decision.reason
    if (reason !== undefined) {
      if (reason === 'unmatched') t.unmatched++
      else if (reason === 'deny-list') t.denied++
      else t.allowListed++
    }
    if (this.onDecision && facts !== undefined) {
      try {
        this.onDecision(decision, facts)
      } catch (err) {
        this.logger.warn({ err }, 'onDecision threw; ignored')
      }
    }
    return decision
  }

  /** Let the request pass unjudged: free the queue places taken, count it, log (throttled). */
  private failOpen(
    err: unknown,
    entries: readonly Entry[],
    facts: RequestFacts<Req> | undefined,
    code: FailOpenCode = 'FG_WRN_STORE_FAILED_OPEN',
    fields?: Record<string, unknown>,
  ): Decision {
    for (const e of entries) {
      e.rt.counts.failedOpen++
      if (e.place !== undefined) {
        this.holdings.leavePlace(e.place)
        e.place = undefined
      }
    }
    this.failOpenLog.warn({ err, code, ...fields }, FAIL_OPEN_MESSAGES[code])
    return this.report(FAILED_OPEN, facts)
  }

  // ---- observers ----------------------------------------------------------------------

  observe(observer: LimiterObserver): () => void {
    checkObject('observer', observer)
    if (observer === undefined) throw optionError('observer', 'an object', observer)
    // Read as plain fields: they are checked here, and called later on the observer itself.
    const fields = observer as Readonly<Record<string, unknown>>
    checkFunction('observer.queued', fields.queued)
    checkFunction('observer.storeCall', fields.storeCall)
    if (fields.queued) this.queueObservers = [...this.queueObservers, observer]
    if (fields.storeCall) this.storeObservers = [...this.storeObservers, observer]
    this.timeStore = this.storeObservers.length > 0 && this.store.synchronous !== true
    return () => {
      this.queueObservers = this.queueObservers.filter((x) => x !== observer)
      this.storeObservers = this.storeObservers.filter((x) => x !== observer)
      this.timeStore = this.storeObservers.length > 0 && this.store.synchronous !== true
    }
  }

  private notifyQueued(ruleId: string, waitMs: number): void {
    for (const o of this.queueObservers) {
      try {
        o.queued!(ruleId, waitMs)
      } catch (err) {
        this.logger.warn({ err }, 'observer.queued threw; ignored')
      }
    }
  }

  private storeCallEnded(startedMs: number, ok: boolean): void {
    const durationMs = performance.now() - startedMs
    for (const o of this.storeObservers) {
      try {
        o.storeCall!(durationMs, ok)
      } catch (err) {
        this.logger.warn({ err }, 'observer.storeCall threw; ignored')
      }
    }
  }

  topClients(ruleId: string, options?: TopClientsQuery): readonly TopClient[] {
    if (this.top === undefined) {
      throw refusedOption('topClients', 'this limiter was created with topClients: false')
    }
    return this.top.top(ruleId, options)
  }

  // ---- after the decision -------------------------------------------------------------

  release(decision: Decision, outcome?: RequestOutcome): void {
    this.holdings.release(decision, outcome)
  }

  waitInQueue(decision: Decision, signal?: AbortSignal): Promise<boolean> {
    return this.holdings.waitInQueue(decision, signal)
  }

  // ---- one client, outside a request ----------------------------------------------------

  limit(key: ClientKey, options: LimitOptions): Decision | Promise<Decision> {
    if (typeof options !== 'object' || options === null) {
      throw optionError('limit: options', 'an object like { rule: id }', options)
    }
    const ctx = this.clientState
    const rt = findRule(ctx, 'limit', options.rule)
    const stored = keyFor(ctx, 'limit', rt, key)
    const units: unknown = options.cost ?? 1
    if (!isCost(units)) throw optionError('limit: cost', 'a finite number of at least 0', units)
    const rule = rt.compiled.rule
    let maxWaitMs = 0
    let place: string | undefined
    if (rule.onLimit.action === 'queue') {
      place = this.holdings.takePlace(rt.compiled, stored, rule.onLimit.maxQueue)
      if (place !== undefined) maxWaitMs = rule.onLimit.maxWaitMs
    }
    const entry: Entry = {
      rule: rt.compiled,
      key: stored,
      cost: rule.cost * units,
      maxWaitMs,
      shadow: rule.shadow,
      rt,
      place,
    }
    return this.decideEntries([entry], false, undefined)
  }

  get(key: ClientKey, options?: ClientRuleOptions): Promise<readonly ClientState[]> {
    return Promise.resolve().then(() => getState(this.clientState, key, options))
  }

  reset(key: ClientKey, options?: ClientRuleOptions): Promise<void> {
    return Promise.resolve().then(() => resetState(this.clientState, key, options))
  }

  penalty(key: ClientKey, units: number, options?: ClientRuleOptions): Promise<void> {
    return Promise.resolve().then(() => penalize(this.clientState, key, units, options))
  }

  reward(key: ClientKey, units: number, options?: ClientRuleOptions): Promise<void> {
    return Promise.resolve().then(() => giveBack(this.clientState, key, units, options))
  }

  counters(): CountersSnapshot {
    const byRule = new Map<string, ReturnType<typeof zeroCounts>>()
    for (const [id, c] of this.registry.countsByRule) {
      const copy = zeroCounts()
      addCounts(copy, c)
      byRule.set(id, copy)
    }
    const total = zeroCounts()
    addCounts(total, this.total)
    return { total, byRule, inFlight: new Map(this.holdings.inFlight) }
  }

  async close(): Promise<void> {
    this.source?.stop()
    this.watchdog?.stop()
    await this.store.close?.()
  }
}
