import type { AdaptiveGates } from './adaptive/adaptive-gates.js'
import { RulesValidationError } from './errors.js'
import {
  compileKey,
  type KeyBuilderFailed,
  type KeyBuilders,
  type KeyFn,
} from './keys/build-key.js'
import { zeroCounts, type DecisionCounts } from './limiter-counters.js'
import { isThenable } from './limiter-deadline.js'
import { queueWaitMs } from './limiter-queue-wait.js'
import { compileRules as compileRuleSet } from './rules/compile-rules.js'
import type { CompiledRule, CompiledRules } from './rules/compiled-rules.js'
import type { Rule } from './rules/rule.js'
import type { ReportingLimiter } from './rules/sources/host-report.js'
import type { RulesSource } from './rules/sources/rules-source.js'
import type { FailOpenLog } from './limiter-fail-open-log.js'
import type { Logger } from './logger.js'
import type { Store } from './stores/store.js'
import {
  functionPick,
  tierPick,
  type LimitFunctions,
  type LimitPick,
  type LimitProblem,
  type TierLookup,
} from './limiter-limits.js'
import type { RuleTier } from './rules/rule.js'
import { compileRuleLists, type DenyRefusal, type RuleLists } from './limiter-rule-lists.js'
import type { StateGenerations } from './limiter-state-generations.js'

/** What the hot path needs per rule, resolved once per rule set. */
export interface RuleRuntime {
  readonly compiled: CompiledRule
  readonly keyFn: KeyFn
  readonly counts: DecisionCounts
  /** Whether an admitted request holds something until it ends (a concurrency slot). */
  readonly holdsSlot: boolean
  /** Whether the rule keeps only failed or only successful requests counted. */
  readonly countsOutcome: boolean
  /** Chooses the limit per request (tiers or a limit function); undefined: the rule's own. */
  readonly pick: LimitPick | undefined
  /** State ids of the rule's other limits (tiers, a function's answers so far). */
  readonly variantStateIds: Iterable<string> | undefined
  /** The rule's tiers, when it has some. */
  readonly tiers: TierLookup | undefined
  /** The limits the rule's limit function answered on this host, by state id; none: no function. */
  readonly answered: ReadonlyMap<string, RuleTier> | undefined
  /** The rule's `deny` and `allow` lists, compiled. */
  readonly lists: RuleLists
  /**
   * Whether a request this rule alone decides can take the limiter's short path: no lists, no
   * limit to choose, no ban, no queue, nothing held after the decision (see `Limiter.judgeLone`).
   */
  readonly lone: boolean
}

/** How a limiter chooses limits in code: its `limits` option. */
export interface LimitSettings<Req> {
  readonly functions: LimitFunctions<Req>
  readonly timeoutMs: number
  readonly problem: LimitProblem
  /** A shared store did not record a limit function's answer (other hosts' `reset` miss it). */
  readonly recordFailed?: LimitProblem | undefined
  /** A shared store's record of limit function answers held something that is not one. */
  readonly recordedInvalid?: LimitProblem | undefined
}

/**
 * The limiter's `limits` option with its deadline, and where its problems are logged (at most
 * once per interval: a bad answer repeats on every request).
 */
export function limitSettings<Req>(
  functions: LimitFunctions<Req>,
  timeoutMs: number,
  log: FailOpenLog,
): LimitSettings<Req> {
  return {
    functions,
    timeoutMs,
    problem: (reason, fields) =>
      log.warn(
        { code: 'FG_WRN_LIMIT_INVALID', ...fields },
        `${reason}; the rule's own limit applied`,
      ),
    recordFailed: (reason, fields) =>
      log.warn({ code: 'FG_WRN_LIMIT_NOT_RECORDED', ...fields }, reason),
    recordedInvalid: (reason, fields) =>
      log.warn({ code: 'FG_WRN_STORE_RECORD_MALFORMED', ...fields }, reason),
  }
}

const EMPTY_COMPILED: CompiledRules = { rules: [], match: () => [] }

/**
 * How many rules no longer in force keep their counters in `counters().byRule` (the most
 * recently retired): a scrape after a change still sees their last counts, and a rule put back
 * soon after counts on, while rules that come and go for months cannot grow the map without end.
 */
export const RETIRED_RULE_COUNTERS = 100

/**
 * The rule lifecycle of one limiter: the global set in force, the route sets compiled at
 * startup, and each rule's runtime (key function, counters).
 */
export class RuleRegistry<Req> {
  compiled: CompiledRules = EMPTY_COMPILED
  readonly countsByRule: Map<string, DecisionCounts> = new Map()
  /** Ids in countsByRule no longer in force, oldest retirement first (a Set keeps the order). */
  private readonly retired = new Set<string>()
  private readonly runtimes = new WeakMap<CompiledRule, RuleRuntime>()
  private readonly matchCache = new WeakMap<readonly CompiledRule[], RuleRuntime[]>()
  private readonly routeSets: CompiledRules[] = []
  /**
   * State ids a limit function's answers created, by the rule's own state id: a rules swap that
   * keeps the rule keeps them, though the rule's runtime (and its cache of answers) is new.
   */
  private readonly answered = new Map<string, Map<string, RuleTier>>()
  private lastMatched: readonly CompiledRule[] | undefined
  private lastRuntimes: RuleRuntime[] | undefined

  constructor(
    private readonly store: Store,
    private readonly keys: KeyBuilders<Req>,
    private readonly ipv6Subnet: number,
    private readonly denyRefusal: DenyRefusal,
    private readonly limits?: LimitSettings<Req> | undefined,
    private readonly gates?: AdaptiveGates | undefined,
    /** The lives of the states the store keeps, ended when `retain` drops them. */
    private readonly generations?: StateGenerations | undefined,
    /** Hears of a key builder that threw or answered a non-key (the request had no value). */
    private readonly keyFailed?: KeyBuilderFailed | undefined,
  ) {}

  get rules(): readonly Rule[] {
    return this.compiled.rules.map((c) => c.rule)
  }

  /** Compile key builders for every rule first, so a failure leaves the old set untouched. */
  /** @param inForce - the rules of the other sets, which stay in force beside this one */
  private prepare(
    rules: readonly Rule[],
    label: string,
    inForce: readonly CompiledRule[],
  ): CompiledRules {
    const compiled = compileRuleSet(rules)
    const clashes: string[] = []
    const fresh: RuleRuntime[] = compiled.rules.map((c, i) => {
      const path = `${label}[${i}]`
      const fn = this.limits?.functions[c.rule.id]
      if (fn && c.rule.adaptive) {
        clashes.push(
          `${path}.algorithm: rule ${JSON.stringify(c.rule.id)} is adaptive and has a limit function (limits.${c.rule.id}); an adaptive rule sets its own limit`,
        )
      }
      if (fn && c.rule.tiers) {
        clashes.push(
          `${path}.tiers: rule ${JSON.stringify(c.rule.id)} has tiers and a limit function (limits.${c.rule.id}); give it one or the other`,
        )
      }
      const tiers = tierPick(c, this.keys, this.ipv6Subnet, path, this.keyFailed)
      let pick = tiers?.pick
      let variantStateIds: Iterable<string> | undefined = tiers?.stateIds
      let answered: Map<string, RuleTier> | undefined
      if (fn && this.limits) {
        let seen = this.answered.get(c.stateId)
        if (!seen) this.answered.set(c.stateId, (seen = new Map<string, RuleTier>()))
        const failed = this.limits.recordFailed
        pick = functionPick(c, fn, this.limits.timeoutMs, seen, this.limits.problem, (limits) =>
          recordLimits(this.store, c, limits, failed),
        )
        answered = seen
        // Read live: the answers grow after the rules swap.
        variantStateIds = { [Symbol.iterator]: () => seen.keys() }
      }
      const lists = compileRuleLists(c.rule, this.keys, path, this.denyRefusal, this.keyFailed)
      const holdsSlot = c.algorithm.name === 'concurrency'
      const countsOutcome = c.rule.count !== 'all'
      return {
        compiled: c,
        keyFn: compileKey(c.rule, this.keys, this.ipv6Subnet, path, this.keyFailed),
        // Registered by id only once the set is in force (see register): a refused set must
        // leave no rule of its own in counters(), where it would take a metrics label.
        counts: this.countsByRule.get(c.rule.id) ?? zeroCounts(),
        holdsSlot,
        countsOutcome,
        pick,
        variantStateIds,
        tiers: tiers?.lookup,
        answered,
        lists,
        lone:
          pick === undefined &&
          lists.deny === undefined &&
          lists.allow === undefined &&
          !c.ban &&
          !c.rule.adaptive &&
          queueWaitMs(c.rule) <= 0 &&
          !holdsSlot &&
          !countsOutcome,
      }
    })
    if (clashes.length > 0) throw new RulesValidationError(clashes)
    this.gates?.prepare(compiled.rules, label, inForce)
    for (const rt of fresh) this.runtimes.set(rt.compiled, rt)
    return compiled
  }

  /** A set now in force: its rules count under their ids in counters(). */
  private register(set: CompiledRules): void {
    for (const c of set.rules) {
      const id = c.rule.id
      this.retired.delete(id)
      if (!this.countsByRule.has(id)) this.countsByRule.set(id, this.runtimes.get(c)!.counts)
    }
  }

  /** The rules of `previous` no longer in force keep their counters, up to the last few. */
  private retire(previous: CompiledRules): void {
    const live = this.ruleIds()
    for (const c of previous.rules) {
      const id = c.rule.id
      if (!live.has(id) && this.countsByRule.has(id)) this.retired.add(id)
    }
    for (const id of this.retired) {
      if (this.retired.size <= RETIRED_RULE_COUNTERS) break
      this.retired.delete(id)
      this.countsByRule.delete(id)
    }
  }

  /** Swap in a rule set. A store that refuses it (retain throws) leaves the old set in force. */
  install(rules: readonly Rule[]): void {
    const next = this.prepare(
      rules,
      'rules',
      this.routeSets.flatMap((set) => set.rules),
    )
    refuseBansWithout(this.store, next)
    for (const set of this.routeSets) refuseClashes(next, set, 'a route rule set (routeRules)')
    this.retain([next, ...this.routeSets])
    const previous = this.compiled
    this.compiled = next
    this.register(next)
    this.retire(previous)
    this.forgetAnswers()
    this.gates?.retain(this.allCompiled())
  }

  private allCompiled(): CompiledRule[] {
    return [this.compiled, ...this.routeSets].flatMap((set) => set.rules)
  }

  /** Compile a route's extra rules at startup. */
  addRouteSet(rules: readonly Rule[]): CompiledRules {
    const set = this.prepare(rules, 'routeRules', this.allCompiled())
    refuseBansWithout(this.store, set)
    refuseClashes(set, this.compiled, 'the global rules')
    // The store may refuse a rule (SyncedStore shares only some algorithms): at startup, not
    // on the route's first request.
    this.retain([this.compiled, ...this.routeSets, set])
    this.routeSets.push(set)
    this.register(set)
    this.gates?.retain(this.allCompiled())
    return set
  }

  /** The ids of every rule that can apply: the global set in force and the route sets. */
  ruleIds(): Set<string> {
    const ids = new Set<string>()
    for (const set of [this.compiled, ...this.routeSets])
      for (const c of set.rules) ids.add(c.rule.id)
    return ids
  }

  /** Every rule in force, global rules first, then the route rule sets. */
  allRuntimes(): RuleRuntime[] {
    const out: RuleRuntime[] = []
    for (const set of [this.compiled, ...this.routeSets]) {
      for (const c of set.rules) out.push(this.runtimes.get(c)!)
    }
    return out
  }

  /** The runtimes of a matched list; cached per (shared, frozen) list. */
  runtimesFor(matched: readonly CompiledRule[]): RuleRuntime[] {
    // Most requests match the list the previous one matched: skip even the WeakMap.
    if (matched === this.lastMatched) return this.lastRuntimes!
    let rts = this.matchCache.get(matched)
    if (!rts) {
      rts = matched.map((c) => this.runtimes.get(c)!)
      this.matchCache.set(matched, rts)
    }
    this.lastMatched = matched
    this.lastRuntimes = rts
    return rts
  }

  /**
   * Let the store drop the state of every rule not in these sets; it may refuse them (throw),
   * which leaves everything as it was.
   */
  private retain(sets: readonly CompiledRules[]): void {
    if (!this.store.retain) return
    const ids = this.stateIds(sets)
    this.store.retain(ids)
    this.generations?.retain(ids)
  }

  /** Every state id in force: each rule's own and those of its other limits. */
  private stateIds(sets: readonly CompiledRules[]): Set<string> {
    const ids = new Set<string>()
    for (const set of sets) {
      for (const c of set.rules) {
        ids.add(c.stateId)
        if (c.ban) {
          ids.add(c.ban.refusals.stateId)
          ids.add(c.ban.block.stateId)
        }
        const more = this.runtimes.get(c)?.variantStateIds
        if (more) for (const id of more) ids.add(id)
      }
    }
    return ids
  }

  /** Drop the answers of rules no longer in force. */
  private forgetAnswers(): void {
    const live = new Set<string>()
    for (const set of [this.compiled, ...this.routeSets]) {
      for (const c of set.rules) live.add(c.stateId)
    }
    for (const id of this.answered.keys()) if (!live.has(id)) this.answered.delete(id)
  }
}

/**
 * Tell a shared store of a limit function's new answer, so other hosts' `reset` and `get`
 * find its state; a failure is logged (throttled) and costs only that.
 */
function recordLimits(
  store: Store,
  base: CompiledRule,
  limits: RuleTier,
  problem: LimitProblem | undefined,
): void {
  if (typeof store.recordLimits !== 'function') return
  const failed = (err: unknown): void =>
    problem?.('the store did not record a limit function answer', { rule: base.rule.id, err })
  try {
    const done = store.recordLimits(base.stateId, limits)
    // Any thenable, not only this realm's Promise: a rejection must never go unobserved.
    if (isThenable(done)) Promise.resolve(done).catch(failed)
  } catch (err) {
    failed(err)
  }
}

/**
 * A ban lives in the store (so a fleet shares it): refuse, when the rules are installed, a
 * ban the store cannot keep, naming the store and what it lacks.
 */
function refuseBansWithout(store: Store, set: CompiledRules): void {
  const banning = set.rules.find((c) => c.ban)
  if (!banning) return
  const missing = (['reset', 'penalize'] as const).filter((m) => typeof store[m] !== 'function')
  if (missing.length === 0) return
  const name = storeName(store)
  throw new RulesValidationError([
    `rule ${JSON.stringify(banning.rule.id)}: ban needs a store that can ${missing.map((m) => `${m}()`).join(' and ')}; ${name} cannot (MemoryStore and RedisStore can)`,
  ])
}

/** The store's class name, for error messages. */
export function storeName(store: Store): string {
  // The limiter's own front of the store (adaptive rules) is named after the store it fronts.
  const named = (store as { readonly wrapped?: Store }).wrapped ?? store
  const ctor = (named as { constructor?: { name?: unknown } }).constructor
  return typeof ctor?.name === 'string' && ctor.name !== 'Object' ? ctor.name : 'this store'
}

/**
 * Global rules and a route's rules apply together; one id in both would charge one state
 * twice and break all-or-nothing, so such a set is refused.
 */
function refuseClashes(set: CompiledRules, other: CompiledRules, otherName: string): void {
  const ids = new Set(other.rules.map((c) => c.rule.id))
  const issues: string[] = []
  set.rules.forEach((c, i) => {
    if (ids.has(c.rule.id)) {
      issues.push(`rules[${i}].id: ${JSON.stringify(c.rule.id)} is also an id in ${otherName}`)
    }
  })
  if (issues.length > 0) throw new RulesValidationError(issues)
}

export function isRulesSource(x: unknown): x is RulesSource {
  return (
    typeof x === 'object' &&
    x !== null &&
    typeof (x as RulesSource).start === 'function' &&
    typeof (x as RulesSource).stop === 'function'
  )
}

/**
 * A limit function for a rule id no static rule has is most likely a typo; it is kept (route
 * rules compiled later may have the id) but said once.
 */
export function warnUnknownLimits(
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

/**
 * Starts a rules source. A failed load is a warning (the last good rules stay in force); a
 * refused set is logged as an error by `apply` (someone must change the rules or the host's
 * key builders); a recovery is news.
 */
export function startRulesSource(
  source: RulesSource,
  apply: (next: Rule[], revision: string | undefined) => void,
  limiter: ReportingLimiter,
  log: Logger,
): Promise<void> {
  return source.start(
    apply,
    (err) =>
      log.warn(
        { err, code: 'FG_ERR_RULES_SOURCE' },
        'rules source failed; keeping the rules in force',
      ),
    limiter,
    () => log.info({}, 'rules source recovered'),
  )
}
