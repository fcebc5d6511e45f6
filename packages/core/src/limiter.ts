import { AdaptiveGates } from './adaptive/adaptive-gates.js'
import type { AdaptiveState } from './adaptive/adaptive-state.js'
import { AdaptiveStore } from './adaptive/adaptive-store.js'
import { turnClock, type Clock } from './clock.js'
import type { Decision } from './decision.js'
import { addCounts, zeroCounts, type CountersSnapshot } from './limiter-counters.js'
import { boundedClientCall, closeWithin } from './limiter-bounded.js'
import { DeadlineWatchdog } from './limiter-deadline.js'
import { accessOptions, ruleDenied, type AccessOptions } from './limiter-access-options.js'
import { ALLOW_LISTED, NO_RULES } from './limiter-decide.js'
import { allowListedByAny, deniedByRules } from './limiter-rule-lists.js'
import { chargeOf, fillEntries, isCost, type Entry, type PendingPick } from './limiter-entry.js'
import { queueWaitMs } from './limiter-queue-wait.js'
import { FailOpenLog, keyBuilderReporter } from './limiter-fail-open-log.js'
import { Holdings } from './limiter-holdings.js'
import { StateGenerations } from './limiter-state-generations.js'
import type { LimiterObserver } from './limiter-observer.js'
import {
  eventStateOf,
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
import { DecisionReport } from './limiter-report.js'
import { RoundTrip } from './limiter-round-trip.js'
import {
  RuleRegistry,
  isRulesSource,
  limitSettings,
  startRulesSource,
  warnUnknownLimits,
  type RuleRuntime,
} from './limiter-rules.js'
import { TopClientsTracker, type TopClient, type TopClientsQuery } from './limiter-top-clients.js'
import { scopeLogger, stderrLogger, type Logger } from './logger.js'
import { MAX_TIMER_MS } from './timer-delay.js'
import {
  checkFunction,
  checkFunctionMap,
  checkLogger,
  checkMethods,
  checkObject,
  checkPositiveInt,
  optionError,
  refusedOption,
  renamedOption,
} from './options/checks.js'
import type { RequestFacts } from './request-facts.js'
import type { CompiledRule, CompiledRules } from './rules/compiled-rules.js'
import type { Rule } from './rules/rule.js'
import { parseRules, type RuleInput } from './rules/schema.js'
import type { RulesSource } from './rules/sources/rules-source.js'
import { MemoryStore } from './stores/memory-store.js'
import type { Store } from './stores/store.js'
import type { Limiter, LimiterOptions, RequestOutcome } from './limiter-types.js'

export type { Limiter, LimiterOptions } from './limiter-types.js'

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

/** The default `stateTimeoutMs`, in `decisionTimeoutMs`. */
const STATE_TIMEOUT_FACTOR = 20

class LimiterEngine<Req> implements Limiter<Req> {
  private readonly store: Store
  /** What `limit`, `get`, `reset`, `penalty` and `reward` work with. */
  private readonly clientState: ClientStateContext
  private readonly logger: Logger
  private readonly source: RulesSource | undefined
  private readonly registry: RuleRegistry<Req>
  private readonly holdings: Holdings
  private readonly top: TopClientsTracker | undefined
  private readonly reporter: DecisionReport<Req>
  private readonly roundTrip: RoundTrip<Req>
  private readonly gates = new AdaptiveGates()
  private readonly clock: Clock
  private readonly scratch: Entry[] = []
  // Whether a check() on the stack is using `scratch` and `pendingScratch`.
  private scratchInUse = false
  /** Limits still being chosen, filled and emptied within one check (no array per request). */
  private readonly pendingScratch: PendingPick[] = []
  /**
   * The entry of `judgeLone`, reused (made on the first request it serves, in the field order
   * of `fillEntries`' entries), and the one-entry list that holds it.
   */
  private readonly lone: Entry = {
    rule: undefined as unknown as CompiledRule,
    key: '',
    cost: 0,
    maxWaitMs: 0,
    shadow: false,
    rt: undefined as unknown as RuleRuntime,
    place: undefined,
    generation: undefined,
  }
  private readonly loneEntries: Entry[] = [this.lone]
  /** The short path for requests one plain rule decides; off only to test it against the general path. */
  private lonePath = true
  private readonly watchdog: DeadlineWatchdog | undefined
  private readonly access: AccessOptions
  /** The deadline of `get`, `reset`, `penalty` and `reward`, store calls included. */
  private readonly stateTimeoutMs: number
  private readonly closeTimeoutMs: number
  private closing: Promise<void> | undefined

  readonly ready: Promise<void>

  constructor(options: LimiterOptions<Req>) {
    checkObject('options', options)
    const o = options ?? {}
    const store = o.store === undefined ? new MemoryStore() : o.store
    checkMethods('store', store, ['consume', 'refund'])
    const clock = checkFunction('clock', o.clock) ?? turnClock
    this.clock = clock
    // Adaptive rules are decided on this host; the store given decides the others.
    this.store = new AdaptiveStore(store, this.gates, clock)
    const deadline = renamedOption(o, 'timeoutMs', 'decisionTimeoutMs', 'createLimiter', o.logger)
    const timeoutMs = checkPositiveInt(deadline.name, deadline.value, 50)
    // Calls about one client are not on a request's path and may make two store round trips
    // (a shared store's recorded limits, then the call): a deadline well past a decision's.
    this.stateTimeoutMs = checkPositiveInt(
      'stateTimeoutMs',
      o.stateTimeoutMs,
      Math.min(STATE_TIMEOUT_FACTOR * timeoutMs, MAX_TIMER_MS),
    )
    this.closeTimeoutMs = checkPositiveInt('closeTimeoutMs', o.closeTimeoutMs, 10_000)
    const bound = this.store.settlesWithinMs
    this.watchdog =
      typeof bound === 'number' && bound <= timeoutMs ? new DeadlineWatchdog(timeoutMs) : undefined
    const ipv6Subnet = checkPositiveInt('ipv6Subnet', o.ipv6Subnet, 64, 128)
    const failOpenLogIntervalMs = checkPositiveInt(
      'failOpenLogIntervalMs',
      o.failOpenLogIntervalMs,
      10_000,
    )
    checkLogger('logger', o.logger)
    this.logger = scopeLogger(o.logger)
    const onDecision = checkFunction('onDecision', o.onDecision)
    checkFunctionMap('keys', o.keys, true)
    checkFunctionMap('limits', o.limits)
    const rules: unknown = o.rules
    if (rules !== undefined && !Array.isArray(rules) && !isRulesSource(rules)) {
      throw optionError('rules', 'an array of rules or a RulesSource', rules)
    }
    // One reporter, made once: the compiled keys call it only when a builder fails.
    const keyFailed = keyBuilderReporter(new FailOpenLog(this.logger, clock, failOpenLogIntervalMs))
    this.access = accessOptions(o, keyFailed)
    const failOpenLog = new FailOpenLog(this.logger, clock, failOpenLogIntervalMs)
    const limitLog = new FailOpenLog(this.logger, clock, failOpenLogIntervalMs)
    const limits = limitSettings(o.limits ?? {}, timeoutMs, limitLog)
    // A store that drops the state of rules that leave: what a request holds in a dropped state
    // is not given back to the state a later swap makes under the same id.
    const generations = store.retain ? new StateGenerations() : undefined
    this.registry = new RuleRegistry(
      store,
      o.keys ?? {},
      ipv6Subnet,
      ruleDenied,
      limits,
      this.gates,
      generations,
      keyFailed,
    )
    // A log each: a store failing every refund must not hide its failing bans, nor either the
    // requests passed unjudged.
    const logOf = (): FailOpenLog => new FailOpenLog(this.logger, clock, failOpenLogIntervalMs)
    this.holdings = new Holdings(
      this.store,
      clock,
      logOf(),
      (slots, ms, nowMs) => this.gates.sample(slots, ms, nowMs),
      generations,
    )
    this.clientState = {
      store: this.store,
      ipv6Subnet,
      clock,
      runtimes: () => this.registry.allRuntimes(),
      recordedInvalid: limits.recordedInvalid,
    }
    this.top =
      o.topClients === false
        ? undefined
        : new TopClientsTracker(o.topClients, (id) => this.registry.ruleIds().has(id))
    this.reporter = new DecisionReport(this.store, this.logger, onDecision)
    this.roundTrip = new RoundTrip({
      store: this.store,
      clock,
      timeoutMs,
      watchdog: this.watchdog,
      holdings: this.holdings,
      top: this.top,
      failOpenLog,
      banLog: logOf(),
      reporter: this.reporter,
    })
    if (isRulesSource(rules)) {
      this.source = rules
      // Without a logger, these few lines go to stderr: a host must say when it cannot load or
      // apply its rules.
      const log = o.logger === undefined ? stderrLogger : this.logger
      this.ready = startRulesSource(
        rules,
        (next, revision) => this.applySource(next, revision, log),
        this,
        log,
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
    // check() never throws: whatever goes wrong outside the store (hostile facts) lets the
    // request pass unjudged, like a store failure. A key builder's failure never gets here: it
    // is no value for its key part (see partFn), or a client could choose to pass unjudged.
    try {
      return this.judgeRequest(facts)
    } catch (err) {
      return this.roundTrip.failOpen(err, [], facts, 'FG_WRN_CHECK_FAILED_OPEN')
    }
  }

  private judgeRequest(facts: RequestFacts<Req>): Decision | Promise<Decision> {
    // Before any matching or counting: a denied client costs no store call.
    if (this.access.denyList?.has(facts)) return this.reporter.report(this.access.denied, facts)
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
    // A deny list wins over every allow list: the rules' deny lists are read first.
    const denied = rts && deniedByRules(rts, facts)
    if (denied) return this.reporter.report(denied, facts)
    if (this.access.allowList?.has(facts)) return this.reporter.report(ALLOW_LISTED, facts)
    if (!rts) return this.reporter.report(this.access.unmatched, facts)

    const routeCost: unknown = facts.cost === undefined ? 1 : facts.cost
    if (!isCost(routeCost)) {
      // Counting it would refund (negative) or poison the state (NaN, Infinity): refuse to count.
      return this.roundTrip.failOpen(undefined, [], facts, 'FG_WRN_COST_INVALID', {
        cost: routeCost,
      })
    }

    // The scratch arrays are this call's until its decision is reported. User code that runs
    // meanwhile (a key builder, a limit function, the store, an observer) may call check()
    // again: that call gets arrays of its own, or it would decide and charge with ours.
    const nested = this.scratchInUse
    // A synchronous store keeps nothing past its call: reuse the entry objects.
    const reuse = this.store.synchronous === true && !nested
    const entries: Entry[] = reuse ? this.scratch : []
    const pending = nested ? [] : this.pendingScratch
    if (!nested) this.scratchInUse = true
    try {
      // `reuse` implies not nested: the short path's one entry object is this call's too.
      if (reuse && rts.length === 1 && rts[0]!.lone && this.lonePath) {
        return this.judgeLone(rts[0]!, facts, routeCost)
      }
      return this.countRequest(entries, pending, rts, facts, routeCost, reuse)
    } finally {
      if (!nested) this.scratchInUse = false
    }
  }

  /** Fill the entries of the matched rules (in `entries`, which may be the scratch), and decide. */
  private countRequest(
    entries: Entry[],
    pending: PendingPick[],
    rts: readonly RuleRuntime[],
    facts: RequestFacts<Req>,
    routeCost: number,
    reuse: boolean,
  ): Decision | Promise<Decision> {
    // Only when non-empty: an array's length store goes through a runtime call (about 450
    // instructions per request, measured with callgrind over the Fastify allow path).
    if (pending.length !== 0) pending.length = 0
    let n: number
    try {
      n = fillEntries(entries, rts, facts, routeCost, reuse, pending)
    } catch (err) {
      return this.roundTrip.failOpen(err, [], facts, 'FG_WRN_CHECK_FAILED_OPEN')
    }
    if (n === 0) {
      return this.reporter.report(allowListedByAny(rts, facts) ? ALLOW_LISTED : NO_RULES, facts)
    }
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
        .then(() => this.roundTrip.decideEntries(own, false, facts))
        .catch((err: unknown) =>
          this.roundTrip.failOpen(err, own, facts, 'FG_WRN_CHECK_FAILED_OPEN'),
        )
    }
    // Every entry's cost is a `chargeOf`: finite, at least 0, and bounded.
    return this.roundTrip.decideEntries(entries, reuse, facts)
  }

  /**
   * The request one rule decides, a rule with nothing but a limit (`RuleRuntime.lone`), on a
   * synchronous store: the decision the general path makes, without its loops over rules and
   * the steps that have nothing to do here (lists, a limit to choose, bans, queues, holdings).
   * A key builder that throws reaches `check()`'s own catch, as from `fillEntries`.
   */
  private judgeLone(
    rt: RuleRuntime,
    facts: RequestFacts<Req>,
    routeCost: number,
  ): Decision | Promise<Decision> {
    const key = rt.keyFn(facts)
    // No allow list: a request the rule's key skips is one no rule counted.
    if (key === undefined) return this.reporter.report(NO_RULES, facts)
    const compiled = rt.compiled
    const rule = compiled.rule
    const e = this.lone
    e.rule = compiled
    e.key = key
    e.cost = chargeOf(rule.cost, routeCost)
    e.shadow = rule.shadow
    e.rt = rt
    return this.roundTrip.decideLone(this.loneEntries, facts)
  }

  // ---- observers ----------------------------------------------------------------------

  observe(observer: LimiterObserver): () => void {
    return this.reporter.observe(observer)
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
    const entry: Entry = {
      rule: eventStateOf(rt, key),
      key: stored,
      cost: chargeOf(rule.cost, units),
      maxWaitMs: queueWaitMs(rule),
      shadow: rule.shadow,
      rt,
      place: undefined,
      generation: undefined,
    }
    return this.roundTrip.decideEntries([entry], false, undefined)
  }

  get(key: ClientKey, options?: ClientRuleOptions): Promise<readonly ClientState[]> {
    return boundedClientCall('get', this.stateTimeoutMs, () =>
      getState(this.clientState, key, options),
    )
  }

  reset(key: ClientKey, options?: ClientRuleOptions): Promise<void> {
    return boundedClientCall('reset', this.stateTimeoutMs, () =>
      resetState(this.clientState, key, options),
    )
  }

  penalty(key: ClientKey, units: number, options?: ClientRuleOptions): Promise<void> {
    return boundedClientCall('penalty', this.stateTimeoutMs, () =>
      penalize(this.clientState, key, units, options),
    )
  }

  reward(key: ClientKey, units: number, options?: ClientRuleOptions): Promise<void> {
    return boundedClientCall('reward', this.stateTimeoutMs, () =>
      giveBack(this.clientState, key, units, options),
    )
  }

  adaptive(ruleId: string): AdaptiveState | undefined {
    if (typeof ruleId !== 'string') throw optionError('adaptive: ruleId', 'a rule id', ruleId)
    return this.gates.state(ruleId, this.clock())
  }

  counters(): CountersSnapshot {
    const byRule = new Map<string, ReturnType<typeof zeroCounts>>()
    for (const [id, c] of this.registry.countsByRule) {
      const copy = zeroCounts()
      addCounts(copy, c)
      byRule.set(id, copy)
    }
    const total = zeroCounts()
    addCounts(total, this.reporter.total)
    return { total, byRule, inFlight: this.gates.addInFlight(this.holdings.inFlightNow()) }
  }

  close(): Promise<void> {
    this.closing ??= this.shutDown()
    return this.closing
  }

  private shutDown(): Promise<void> {
    this.roundTrip.closed = true
    this.source?.stop()
    this.watchdog?.stop()
    // Queued requests are refused and their reservations given back while the store is open.
    return closeWithin(
      [
        {
          what: 'the store taking back what queued requests reserved',
          run: () => this.holdings.close(),
        },
        { what: 'store.close()', run: () => this.store.close?.() },
      ],
      this.closeTimeoutMs,
      this.logger,
    )
  }
}
