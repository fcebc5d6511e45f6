import type { AlgorithmResult } from './algorithms/algorithm.js'
import { turnClock, type Clock } from './clock.js'
import type { Decision, DecisionAction, RuleOutcome } from './decision.js'
import { FloodgateError, OptionsError } from './errors.js'
import { compileKey, type KeyBuilders, type KeyFn } from './keys/build-key.js'
import {
  addCounts,
  zeroCounts,
  type CountersSnapshot,
  type DecisionCounts,
} from './limiter-counters.js'
import { scopeLogger, type Logger } from './logger.js'
import type { RequestFacts } from './request-facts.js'
import { compileRules as compileRuleSet } from './rules/compile-rules.js'
import type { CompiledRule, CompiledRules } from './rules/compiled-rules.js'
import type { Rule } from './rules/rule.js'
import { parseRules, type RuleInput } from './rules/schema.js'
import type { RulesSource } from './rules/sources/rules-source.js'
import { MemoryStore } from './stores/memory-store.js'
import type { ConsumeEntry, RefundEntry, Store } from './stores/store.js'

/** Options of {@link createLimiter}. */
export interface LimiterOptions<Req = unknown> {
  /** Rules as plain data (validated here), or a source that delivers them (file, rules service). */
  readonly rules?: readonly RuleInput[] | RulesSource | undefined
  /**
   * Where state lives.
   * @default new MemoryStore()
   */
  readonly store?: Store | undefined
  /** Key builders: `user` serves the `user` key part, other names serve `custom:<name>`. */
  readonly keys?: KeyBuilders<Req> | undefined
  /**
   * Prefix length IPv6 clients are grouped by.
   * @default 64
   */
  readonly ipv6Subnet?: number | undefined
  /**
   * Milliseconds clock.
   * @default turnClock (Date.now() once per event-loop turn)
   */
  readonly clock?: Clock | undefined
  /**
   * Deadline for an asynchronous store's answer; past it the request passes (fail-open).
   * @default 50
   */
  readonly timeoutMs?: number | undefined
  /** pino-compatible logger; scoped with `child({ component: 'floodgate' })`. */
  readonly logger?: Logger | undefined
  /** Called with every decision, for metrics and audit. Must not throw. */
  readonly onDecision?: ((decision: Decision, facts: RequestFacts<Req>) => void) | undefined
  /**
   * At most one fail-open log line per this interval; the line counts the ones it stands for.
   * @default 10_000
   */
  readonly failOpenLogIntervalMs?: number | undefined
}

/** The limiter engine: rules, keys and a store, deciding one request at a time. */
export interface Limiter<Req = unknown> {
  /**
   * Decide one request. Synchronous (never a promise) with a synchronous store such as
   * MemoryStore; a promise with an asynchronous one. Never throws and never rejects: a store
   * failure or timeout yields an allow with `failedOpen: true`.
   */
  check(facts: RequestFacts<Req>): Decision | Promise<Decision>
  /**
   * Free what an admitted request holds (concurrency slots). Call once the response has
   * finished or the client went away; later calls do nothing.
   */
  release(decision: Decision): void
  /**
   * Wait out a queued decision. Resolves true when the request may proceed; false when
   * `signal` aborted first, in which case the reservation is refunded and the queue place freed.
   */
  waitInQueue(decision: Decision, signal?: AbortSignal): Promise<boolean>
  /**
   * Validate and compile extra rules (per-route rules) at startup, for `facts.routeRules`.
   * @throws RulesValidationError or FloodgateError naming what is wrong
   */
  compileRules(rules: readonly RuleInput[]): CompiledRules
  /**
   * Replace the rules. A bad set throws and the previous rules stay in force; state of rules
   * that did not change is kept.
   */
  updateRules(rules: readonly RuleInput[]): void
  /** The rules in force. */
  readonly rules: readonly Rule[]
  /** Resolves once the rules source's first load attempt is over. */
  readonly ready: Promise<void>
  counters(): CountersSnapshot
  /** Stop the rules source and close the store. */
  close(): Promise<void>
}

interface RuleRuntime {
  readonly compiled: CompiledRule
  readonly keyFn: KeyFn
  readonly counts: DecisionCounts
  /** Whether an admitted request holds something until it ends (a concurrency slot). */
  readonly holdsSlot: boolean
}

/** A store entry plus the rule's runtime, so the decision needs no second lookup. */
interface Entry extends ConsumeEntry {
  rule: CompiledRule
  key: string
  cost: number
  maxWaitMs: number
  shadow: boolean
  rt: RuleRuntime
  /** The queue place taken before asking the store, so concurrent checks cannot overfill it. */
  place: string | undefined
}

interface Lease {
  released: boolean
  /** Entries recorded for the request: refunded when a queued client goes away. */
  readonly charged: RefundEntry[]
  /** Concurrency slots: refunded at release. */
  readonly slots: RefundEntry[]
  /** Queue places held while the request waits. */
  readonly queueKeys: string[]
}

const EMPTY_COMPILED: CompiledRules = { rules: [], match: () => [] }

function baseDecision(failedOpen: boolean): Decision {
  return Object.freeze({
    allowed: true,
    action: 'allow',
    status: 200,
    limit: 0,
    remaining: 0,
    resetMs: 0,
    retryAfterMs: 0,
    waitMs: 0,
    rule: undefined,
    outcomes: Object.freeze([]),
    failedOpen,
  })
}

/** The decision when no rule applies: allowed, no outcomes, no headers. */
const NO_RULES: Decision = baseDecision(false)
/** The decision when the store failed: allowed, unjudged. */
const FAILED_OPEN: Decision = baseDecision(true)

function isRulesSource(x: unknown): x is RulesSource {
  return (
    typeof x === 'object' &&
    x !== null &&
    typeof (x as RulesSource).start === 'function' &&
    typeof (x as RulesSource).stop === 'function'
  )
}

function isThenable<T>(x: T | Promise<T>): x is Promise<T> {
  return typeof (x as { then?: unknown }).then === 'function'
}

function positiveInt(name: string, v: number | undefined, def: number, max = 2 ** 31 - 1): number {
  if (v === undefined) return def
  if (!Number.isInteger(v) || v < 1 || v > max) {
    throw new OptionsError(`${name}: expected an integer from 1 to ${max}, got ${String(v)}`)
  }
  return v
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
  private readonly logger: Logger
  private readonly keys: KeyBuilders<Req>
  private readonly ipv6Subnet: number
  private readonly onDecision: LimiterOptions<Req>['onDecision']
  private readonly failOpenLogIntervalMs: number
  private readonly source: RulesSource | undefined

  private compiled: CompiledRules = EMPTY_COMPILED
  private readonly runtimes = new WeakMap<CompiledRule, RuleRuntime>()
  private readonly matchCache = new WeakMap<readonly CompiledRule[], RuleRuntime[]>()
  private readonly routeSets: CompiledRules[] = []
  private readonly countsByRule = new Map<string, DecisionCounts>()
  private readonly total = zeroCounts()
  private readonly leases = new WeakMap<Decision, Lease>()
  private readonly queued = new Map<string, number>()
  private readonly scratch: Entry[] = []
  private busy = false
  /** The store settles every call within our `timeoutMs` itself (`settlesWithinMs`). */
  private readonly storeKeepsDeadline: boolean
  private lastFailOpenLogMs = -Infinity
  private suppressedFailOpenLogs = 0

  readonly ready: Promise<void>

  constructor(options: LimiterOptions<Req>) {
    this.store = options.store ?? new MemoryStore()
    this.clock = options.clock ?? turnClock
    this.timeoutMs = positiveInt('timeoutMs', options.timeoutMs, 50)
    const bound = this.store.settlesWithinMs
    this.storeKeepsDeadline = bound !== undefined && bound <= this.timeoutMs
    this.ipv6Subnet = positiveInt('ipv6Subnet', options.ipv6Subnet, 64, 128)
    this.failOpenLogIntervalMs = positiveInt(
      'failOpenLogIntervalMs',
      options.failOpenLogIntervalMs,
      10_000,
    )
    this.logger = scopeLogger(options.logger)
    this.keys = options.keys ?? {}
    this.onDecision = options.onDecision
    if (typeof this.store.consume !== 'function') {
      throw new OptionsError('store: expected an object with a consume() method')
    }
    const rules = options.rules
    if (isRulesSource(rules)) {
      this.source = rules
      this.ready = rules.start(
        (next, revision) => this.applySource(next, revision),
        (err) =>
          this.logger.error(
            { err, code: 'FG_ERR_RULES_SOURCE' },
            'rules source failed; keeping the rules in force',
          ),
      )
    } else {
      this.source = undefined
      if (rules !== undefined) this.install(parseRules(rules))
      this.ready = Promise.resolve()
    }
  }

  get rules(): readonly Rule[] {
    return this.compiled.rules.map((c) => c.rule)
  }

  // ---- rules --------------------------------------------------------------------------

  private applySource(next: Rule[], revision?: string): void {
    try {
      this.install(next)
      this.logger.info({ revision, rules: next.length }, 'rules updated')
    } catch (err) {
      this.logger.error({ err, revision }, 'rules refused; keeping the rules in force')
    }
  }

  /** Compile key builders for every rule first, so a failure leaves the old set untouched. */
  private prepare(rules: readonly Rule[], label: string): CompiledRules {
    const compiled = compileRuleSet(rules)
    const fresh: RuleRuntime[] = compiled.rules.map((c, i) => ({
      compiled: c,
      keyFn: compileKey(c.rule, this.keys, this.ipv6Subnet, `${label}[${i}]`),
      counts: this.countsFor(c.rule.id),
      holdsSlot: c.algorithm.name === 'concurrency',
    }))
    for (const rt of fresh) this.runtimes.set(rt.compiled, rt)
    return compiled
  }

  private countsFor(id: string): DecisionCounts {
    let c = this.countsByRule.get(id)
    if (!c) {
      c = zeroCounts()
      this.countsByRule.set(id, c)
    }
    return c
  }

  /** Swap in a rule set. A store that refuses it (retain throws) leaves the old set in force. */
  private install(rules: readonly Rule[]): void {
    const next = this.prepare(rules, 'rules')
    if (this.store.retain) this.store.retain(this.stateIds([next, ...this.routeSets]))
    this.compiled = next
  }

  updateRules(rules: readonly RuleInput[]): void {
    this.install(parseRules(rules))
  }

  compileRules(rules: readonly RuleInput[]): CompiledRules {
    const set = this.prepare(parseRules(rules), 'routeRules')
    // The store may refuse a rule (SyncedStore shares only some algorithms): at startup, not
    // on the route's first request.
    if (this.store.retain) this.store.retain(this.stateIds([this.compiled, ...this.routeSets, set]))
    this.routeSets.push(set)
    return set
  }

  private stateIds(sets: readonly CompiledRules[]): Set<string> {
    const ids = new Set<string>()
    for (const set of sets) for (const c of set.rules) ids.add(c.stateId)
    return ids
  }

  // ---- the hot path -------------------------------------------------------------------

  private runtimesFor(matched: readonly CompiledRule[]): RuleRuntime[] {
    let rts = this.matchCache.get(matched)
    if (!rts) {
      rts = matched.map((c) => this.runtimes.get(c)!)
      this.matchCache.set(matched, rts)
    }
    return rts
  }

  check(facts: RequestFacts<Req>): Decision | Promise<Decision> {
    const matched = this.compiled.match(facts)
    let rts = matched.length === 0 ? undefined : this.runtimesFor(matched)
    if (facts.routeRules) {
      const extra = facts.routeRules.match(facts)
      if (extra.length > 0) {
        const more = this.runtimesFor(extra)
        rts = rts ? rts.concat(more) : more
      }
    }
    if (!rts) return this.report(NO_RULES, facts)

    // A synchronous store keeps nothing past its call: reuse the entry objects.
    const reuse = this.store.synchronous === true && !this.busy
    const entries: Entry[] = reuse ? this.scratch : []
    let n = 0
    const routeCost = facts.cost ?? 1
    for (let i = 0; i < rts.length; i++) {
      const rt = rts[i]!
      const key = rt.keyFn(facts)
      if (key === undefined) continue
      const rule = rt.compiled.rule
      let maxWaitMs = 0
      let place: string | undefined
      if (rule.onLimit.action === 'queue') {
        const k = queueKey(rt.compiled, key)
        const waiting = this.queued.get(k) ?? 0
        if (waiting < rule.onLimit.maxQueue) {
          maxWaitMs = rule.onLimit.maxWaitMs
          this.queued.set(k, waiting + 1)
          place = k
        }
      }
      const cost = rule.cost * routeCost
      const e = entries[n]
      if (reuse && e) {
        e.rule = rt.compiled
        e.key = key
        e.cost = cost
        e.maxWaitMs = maxWaitMs
        e.shadow = rule.shadow
        e.rt = rt
        e.place = place
      } else {
        entries[n] = { rule: rt.compiled, key, cost, maxWaitMs, shadow: rule.shadow, rt, place }
      }
      n++
    }
    if (n === 0) return this.report(NO_RULES, facts)
    if (entries.length !== n) entries.length = n

    let results: readonly AlgorithmResult[] | Promise<readonly AlgorithmResult[]>
    try {
      results = this.store.consume(entries, this.clock())
    } catch (err) {
      return this.failOpen(err, entries, facts)
    }
    if (isThenable(results)) {
      // A store that broke its `synchronous` promise must not see its entries reused.
      return this.awaitStore(results, reuse ? entries.map((e) => ({ ...e })) : entries, facts)
    }
    // decide() may run onDecision, which may call check() again: keep the scratch ours until then.
    this.busy = reuse
    try {
      return this.decide(entries, results, facts)
    } finally {
      if (reuse) this.busy = false
    }
  }

  private awaitStore(
    pending: Promise<readonly AlgorithmResult[]>,
    entries: Entry[],
    facts: RequestFacts<Req>,
  ): Promise<Decision> {
    if (this.storeKeepsDeadline) {
      // A second timer per call would only cost.
      return pending.then(
        (results) => this.decide(entries, results, facts),
        (err: unknown) => this.failOpen(err, entries, facts),
      )
    }
    return new Promise<Decision>((resolve) => {
      let settled = false
      const timer = setTimeout(() => {
        settled = true
        const err = new FloodgateError(
          'FG_ERR_STORE_TIMEOUT',
          `store did not answer within timeoutMs (${this.timeoutMs} ms)`,
        )
        resolve(this.failOpen(err, entries, facts))
      }, this.timeoutMs)
      pending.then(
        (results) => {
          if (settled) {
            this.undoLateAnswer(entries, results)
            return
          }
          settled = true
          clearTimeout(timer)
          resolve(this.decide(entries, results, facts))
        },
        (err: unknown) => {
          if (settled) return
          settled = true
          clearTimeout(timer)
          resolve(this.failOpen(err, entries, facts))
        },
      )
    })
  }

  /**
   * The store answered after the deadline and the request already passed unjudged: give back
   * the concurrency slots it recorded, or they would stay taken until their lease expires.
   */
  private undoLateAnswer(entries: Entry[], results: readonly AlgorithmResult[]): void {
    const slots = entries
      .filter((e, i) => e.rule.algorithm.name === 'concurrency' && results[i]?.allowed === true)
      .map(refundOf)
    if (slots.length > 0 && entries.every((e, i) => e.shadow || results[i]?.allowed)) {
      this.refund(slots)
    }
  }

  private decide(
    entries: Entry[],
    results: readonly AlgorithmResult[],
    facts: RequestFacts<Req>,
  ): Decision {
    const n = entries.length
    const outcomes: RuleOutcome[] = new Array<RuleOutcome>(n)
    let gate = true
    let drop = false
    let waitMs = 0
    let refusing = -1
    let tightest = -1
    for (let i = 0; i < n; i++) {
      const r = results[i]!
      const e = entries[i]!
      // Copy now: a synchronous store reuses its result objects on the next call.
      outcomes[i] = {
        rule: e.rule.rule,
        key: e.key,
        allowed: r.allowed,
        limit: r.limit,
        remaining: r.remaining,
        resetMs: r.resetMs,
        retryAfterMs: r.retryAfterMs,
        waitMs: r.waitMs,
        shadow: e.shadow,
      }
      if (e.shadow) continue
      if (!r.allowed) {
        gate = false
        if (e.rule.rule.onLimit.action === 'drop') drop = true
        if (refusing < 0 || r.retryAfterMs > outcomes[refusing]!.retryAfterMs) refusing = i
      } else if (r.waitMs > waitMs) {
        waitMs = r.waitMs
      }
      if (tightest < 0 || r.remaining < outcomes[tightest]!.remaining) tightest = i
    }

    let action: DecisionAction
    let status: 200 | 429 | 503 = 200
    let decider = tightest
    if (gate) {
      action = waitMs > 0 ? 'queue' : 'allow'
      if (action === 'queue') decider = outcomes.findIndex((o) => !o.shadow && o.waitMs === waitMs)
    } else {
      decider = refusing
      const over = entries[refusing]!.rule.rule.onLimit
      action = drop ? 'drop' : 'reject'
      status = over.action === 'reject' ? over.status : 429
    }
    const main = decider >= 0 ? outcomes[decider]! : undefined
    const decision: Decision = {
      allowed: gate,
      action,
      status,
      limit: main?.limit ?? 0,
      remaining: main?.remaining ?? 0,
      resetMs: main?.resetMs ?? 0,
      retryAfterMs: gate ? 0 : (main?.retryAfterMs ?? 0),
      waitMs,
      rule: main?.rule,
      outcomes,
      failedOpen: false,
    }

    for (let i = 0; i < n; i++) {
      const c = entries[i]!.rt.counts
      const o = outcomes[i]!
      if (o.shadow) {
        if (!o.allowed) c.shadowRejected++
      } else if (gate) {
        if (o.waitMs > 0) c.queued++
        else c.allowed++
      } else if (!o.allowed) {
        if (drop) c.dropped++
        else c.rejected++
      }
    }
    let holds = action === 'queue'
    for (let i = 0; i < n && !holds; i++) holds = entries[i]!.rt.holdsSlot
    const lease = gate && holds ? this.openLease(decision, entries, outcomes) : undefined
    for (let i = 0; i < n; i++) {
      const place = entries[i]!.place
      if (place !== undefined && !lease?.queueKeys.includes(place)) this.leavePlace(place)
    }
    return this.report(decision, facts)
  }

  /** Track what an admitted request holds: concurrency slots, queue places, charged units. */
  private openLease(
    decision: Decision,
    entries: Entry[],
    outcomes: RuleOutcome[],
  ): Lease | undefined {
    let lease: Lease | undefined
    for (let i = 0; i < entries.length; i++) {
      const e = entries[i]!
      const o = outcomes[i]!
      const concurrency = e.rt.holdsSlot && o.allowed
      if (!concurrency && decision.action !== 'queue') continue
      lease ??= { released: false, charged: [], slots: [], queueKeys: [] }
      // Copies: the entry objects may be reused by the next check.
      if (concurrency) lease.slots.push(refundOf(e))
      if (decision.action === 'queue' && o.allowed) {
        lease.charged.push(refundOf(e))
        // The place taken in check() now belongs to the waiting request.
        if (o.waitMs > 0 && e.place !== undefined) lease.queueKeys.push(e.place)
      }
    }
    if (lease) this.leases.set(decision, lease)
    return lease
  }

  private report(decision: Decision, facts: RequestFacts<Req>): Decision {
    const t = this.total
    if (decision.failedOpen) t.failedOpen++
    else if (decision.action === 'allow') t.allowed++
    else if (decision.action === 'queue') t.queued++
    else if (decision.action === 'drop') t.dropped++
    else t.rejected++
    if (this.onDecision) {
      try {
        this.onDecision(decision, facts)
      } catch (err) {
        this.logger.warn({ err }, 'onDecision threw; ignored')
      }
    }
    return decision
  }

  private failOpen(err: unknown, entries: Entry[], facts: RequestFacts<Req>): Decision {
    for (const e of entries) {
      e.rt.counts.failedOpen++
      if (e.place !== undefined) this.leavePlace(e.place)
    }
    const now = this.clock()
    if (now - this.lastFailOpenLogMs >= this.failOpenLogIntervalMs) {
      this.logger.warn(
        { err, code: 'FG_WRN_STORE_FAILED_OPEN', suppressed: this.suppressedFailOpenLogs },
        'store failed; request passed unjudged (fail-open)',
      )
      this.lastFailOpenLogMs = now
      this.suppressedFailOpenLogs = 0
    } else {
      this.suppressedFailOpenLogs++
    }
    return this.report(FAILED_OPEN, facts)
  }

  // ---- after the decision -------------------------------------------------------------

  private refund(entries: readonly RefundEntry[]): void {
    try {
      const pending = this.store.refund(entries, this.clock())
      if (pending) pending.catch((err: unknown) => this.logger.warn({ err }, 'store refund failed'))
    } catch (err) {
      this.logger.warn({ err }, 'store refund failed')
    }
  }

  private leavePlace(k: string): void {
    const left = (this.queued.get(k) ?? 1) - 1
    if (left > 0) this.queued.set(k, left)
    else this.queued.delete(k)
  }

  private leaveQueue(lease: Lease): void {
    for (const k of lease.queueKeys) this.leavePlace(k)
    lease.queueKeys.length = 0
  }

  release(decision: Decision): void {
    const lease = this.leases.get(decision)
    if (!lease || lease.released) return
    lease.released = true
    this.leaveQueue(lease)
    if (lease.slots.length > 0) this.refund(lease.slots)
  }

  waitInQueue(decision: Decision, signal?: AbortSignal): Promise<boolean> {
    const lease = this.leases.get(decision)
    if (decision.action !== 'queue' || !lease) return Promise.resolve(decision.allowed)
    return new Promise<boolean>((resolve) => {
      const abandon = (): void => {
        clearTimeout(timer)
        if (!lease.released) {
          lease.released = true
          this.leaveQueue(lease)
          this.refund(lease.charged)
        }
        resolve(false)
      }
      const timer = setTimeout(() => {
        signal?.removeEventListener('abort', abandon)
        this.leaveQueue(lease)
        resolve(true)
      }, decision.waitMs)
      if (signal?.aborted) abandon()
      else signal?.addEventListener('abort', abandon, { once: true })
    })
  }

  counters(): CountersSnapshot {
    const byRule = new Map<string, DecisionCounts>()
    for (const [id, c] of this.countsByRule) {
      const copy = zeroCounts()
      addCounts(copy, c)
      byRule.set(id, copy)
    }
    const total = zeroCounts()
    addCounts(total, this.total)
    return { total, byRule }
  }

  async close(): Promise<void> {
    this.source?.stop()
    await this.store.close?.()
  }
}

function refundOf(e: Entry): RefundEntry {
  return { rule: e.rule, key: e.key, cost: e.cost }
}

function queueKey(rule: CompiledRule, key: string): string {
  return `${rule.stateId}\u0000${key}`
}
