import type { Clock } from './clock.js'
import type { Decision } from './decision.js'
import type { KeyBuilders } from './keys/build-key.js'
import type { CountersSnapshot } from './limiter-counters.js'
import type { LimiterObserver } from './limiter-observer.js'
import type { TopClient, TopClientsOptions, TopClientsQuery } from './limiter-top-clients.js'
import type { Logger } from './logger.js'
import type { RequestFacts } from './request-facts.js'
import type { CompiledRules } from './rules/compiled-rules.js'
import type { Rule } from './rules/rule.js'
import type { RuleInput } from './rules/schema.js'
import type { RulesSource } from './rules/sources/rules-source.js'
import type { Store } from './stores/store.js'

/** Options of `createLimiter`. */
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
  /**
   * The per-rule summaries of the clients refused most often (`topClients()`), or `false` for
   * none. Memory: at most `size` entries per rule in force.
   * @default { size: 64, clearKeys: false }
   */
  readonly topClients?: TopClientsOptions | false | undefined
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
  /** Decisions counted since the limiter was made, in total and per rule; in-flight slots. */
  counters(): CountersSnapshot
  /**
   * The clients rule `ruleId` refused most often on this host (a shadow rule: would have
   * refused), most refused first, from a fixed-memory summary. Keys are shown as a salted hash
   * unless the limiter was made with `topClients: { clearKeys: true }`. A rule that refused
   * no one, or is not in force, gives an empty list.
   * @throws OptionsError when `ruleId` is not a string, `limit` is not an integer from 1 to
   *   10000, or the limiter was made with `topClients: false`
   */
  topClients(ruleId: string, options?: TopClientsQuery): readonly TopClient[]
  /**
   * Subscribe to what `counters()` cannot tell: queue waits and store call timings (for a
   * metrics exporter). Returns the function that unsubscribes.
   * @throws OptionsError when `observer` is not an object of functions
   */
  observe(observer: LimiterObserver): () => void
  /** Stop the rules source and close the store. */
  close(): Promise<void>
}
