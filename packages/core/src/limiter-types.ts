import type { AdaptiveState } from './adaptive/adaptive-state.js'
import type { Clock } from './clock.js'
import type { Decision, DecisionStatus } from './decision.js'
import type { KeyBuilders } from './keys/build-key.js'
import type { ClientKey } from './keys/build-key.js'
import type { ClientRuleOptions, ClientState, LimitOptions } from './limiter-client-state.js'
import type { CountersSnapshot } from './limiter-counters.js'
import type { LimiterObserver } from './limiter-observer.js'
import type { TopClient, TopClientsOptions, TopClientsQuery } from './limiter-top-clients.js'
import type { AccessList } from './lists/access-list.js'
import type { Logger } from './logger.js'
import type { RequestFacts } from './request-facts.js'
import type { CompiledRules } from './rules/compiled-rules.js'
import type { Rule } from './rules/rule.js'
import type { RuleInput } from './rules/schema.js'
import type { RulesSource } from './rules/sources/rules-source.js'
import type { Store } from './stores/store.js'
import type { LimitFunctions } from './limiter-limits.js'

/** The statuses a deny-listed client may be answered with (`denyStatus`). */
export type DenyStatus = Extract<DecisionStatus, 403 | 404 | 429 | 503>

/**
 * How an admitted request ended, for rules that count only failed or only successful requests
 * (`count`). A response that did not finish (the client went away) is `'failed'`.
 * `'abandoned'` is a request never served: its client left before the decision came back or
 * while it waited in a queue. It counts as `'failed'`, and no latency is measured for it, so
 * clients giving up under load cannot pull an adaptive rule's percentile down; a queued
 * request released so gives back every unit reserved for it.
 */
export type RequestOutcome = 'succeeded' | 'failed' | 'abandoned'

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
   * Limits chosen per request in code, by rule id: the function answers a limit (or a limit
   * and window) for each request, such as the one the user's plan allows. Each distinct limit
   * keeps its own state. A rule with `tiers` cannot also have a function.
   * @example
   * limits: { 'per-user': (req) => (req.user?.plan === 'pro' ? 1000 : 100) }
   */
  readonly limits?: LimitFunctions<Req> | undefined
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
   * How long one decision waits, in milliseconds, for what answers asynchronously (the store,
   * a limit function, a ban's record); past it the request passes unjudged (fail-open).
   * @default 50
   */
  readonly decisionTimeoutMs?: number | undefined
  /**
   * The old name of {@link LimiterOptions.decisionTimeoutMs}; works until the next version,
   * with a `FG_WRN_OPTION_RENAMED` warning.
   * @deprecated Use `decisionTimeoutMs`.
   */
  readonly timeoutMs?: number | undefined
  /**
   * How long `get`, `reset`, `penalty` and `reward` wait for the store, in milliseconds, all
   * their store calls included; past it they reject with `FG_ERR_STORE_TIMEOUT` naming the call.
   * The store may still apply a call it answers late: a timed-out `penalty` or `reward` may or
   * may not have been applied, a timed-out `reset` may still take effect.
   * @default 20 × decisionTimeoutMs (1000 with the default decisionTimeoutMs)
   */
  readonly stateTimeoutMs?: number | undefined
  /**
   * How long `close()` waits, in milliseconds, for the store to take back what queued requests
   * reserved and then to close; past it `close()` resolves anyway, logging what it gave up on
   * (`FG_ERR_STORE_TIMEOUT`, `gaveUpOn`). Raise it above the store's own shutdown time
   * (a SyncedStore's is up to about three times its `syncTimeoutMs`).
   * @default 10_000
   */
  readonly closeTimeoutMs?: number | undefined
  /**
   * pino-compatible logger; scoped with `child({ component: 'floodgate' })`. The adapters pass
   * the framework's (Fastify's `fastify.log`) when the app gives none.
   * @default silent, except what a rules source reports (a failed load, a recovery, a refused
   * or a new rule set), which goes to stderr, one line each
   */
  readonly logger?: Logger | undefined
  /**
   * Called with every decision, for metrics and audit, on the request path. A throw, or the
   * rejection of a promise it returns, is logged as a warning and ignored.
   */
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
  /**
   * Clients refused before any counting, by address or CIDR range (IPv4, IPv6, IPv4-mapped IPv6)
   * or by key value. The deny list wins over the allow list.
   * @default undefined (nobody)
   */
  readonly deny?: AccessList | undefined
  /**
   * The status a client on the deny list gets (with a problem+json body).
   * @default 403
   */
  readonly denyStatus?: DenyStatus | undefined
  /**
   * Clients never limited (health checkers, internal callers): no rule counts them and no
   * RateLimit header is sent.
   * @default undefined (nobody)
   */
  readonly allow?: AccessList | undefined
  /**
   * What to do with a request no rule matches: let it pass (`'allow'`), or refuse it with 503
   * and a problem+json body saying the client is not known to the rules (`'reject'`), for
   * services where every client must be covered by a rule. Counted in `counters().total.unmatched`
   * either way.
   * @default 'allow'
   */
  readonly unmatched?: 'allow' | 'reject' | undefined
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
   * Free what an admitted request holds (concurrency slots) and settle rules that count by
   * outcome: with `outcome`, a rule whose `count` leaves that outcome out gets its units back
   * (through the store's refund, once). Call once the response has finished or the client went
   * away; later calls do nothing. Without `outcome`, every charge stays.
   */
  release(decision: Decision, outcome?: RequestOutcome): void
  /**
   * Wait out a queued decision. Resolves true when the request may proceed; false when
   * `signal` aborted first, the decision was released meanwhile, or the limiter closed, in
   * which case the reservation is refunded and the queue place freed.
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
   * The live state of the adaptive rule `ruleId` on this host: its limit on requests in flight,
   * the requests in flight, the latency percentile of the last window, the baseline learnt.
   * Undefined when no adaptive rule with that id is in force.
   * @throws OptionsError when `ruleId` is not a string
   * @example
   * const { limit, inFlight, percentileMs } = limiter.adaptive('shed') ?? {}
   */
  adaptive(ruleId: string): AdaptiveState | undefined
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
   * metrics exporter). Returns the function that ends this subscription (only this one, also
   * when the same object is subscribed twice; later calls do nothing).
   * @throws OptionsError when `observer` is not an object of functions
   */
  observe(observer: LimiterObserver): () => void
  /**
   * Decide one event that is not an HTTP request (a WebSocket message, a job, a GraphQL
   * field) against one rule, chosen by id. Same answer, fail-open and ban as `check`, and
   * counted in `counters()`; `onDecision` is not called (it takes request facts). Synchronous
   * with a synchronous store.
   *
   * @param key - The client: the value of the rule's one key part (`'203.0.113.7'` for a rule
   * keyed by `ip`), or an object of part values named as the rule names them
   * (`{ user: 'u1', 'header:x-tenant': 'acme' }`).
   * @param options - `rule`: the rule's id; `cost`: units, times the rule's cost (default 1).
   * @throws OptionsError when no rule has that id, the key does not key it, or the cost is
   * not a finite number of at least 0.
   */
  limit(key: ClientKey, options: LimitOptions): Decision | Promise<Decision>
  /**
   * Read a client's state under each rule (or the one named), charging nothing: what remains,
   * when it is fresh again, and how long its ban lasts. Keys as in {@link Limiter.limit};
   * without `rule`, every rule in force the key can key.
   * @throws OptionsError (rejects) when nothing is keyed by `key`, or the store cannot peek.
   * @throws FloodgateError `FG_ERR_STORE_TIMEOUT` (rejects) past `stateTimeoutMs`; the store's
   * own failure (rejects, as an Error) when it fails or answers garbage.
   */
  get(key: ClientKey, options?: ClientRuleOptions): Promise<readonly ClientState[]>
  /**
   * Forget a client's state under each rule (or the one named), its counted refusals and its
   * ban: after a CAPTCHA solved or a successful login. With a shared store, every host sees it.
   * @throws OptionsError (rejects) when nothing is keyed by `key`, or the store cannot reset.
   * @throws FloodgateError `FG_ERR_STORE_TIMEOUT` (rejects) past `stateTimeoutMs`: the reset
   * may still take effect when the store answers.
   */
  reset(key: ClientKey, options?: ClientRuleOptions): Promise<void>
  /**
   * Charge a client `units` past its limit: it goes into debt and is refused until it is paid
   * back at the rule's refill rate. Only token-bucket and gcra rules carry debt.
   * @throws OptionsError (rejects) for another algorithm, a bad `units`, or nothing keyed.
   * @throws FloodgateError `FG_ERR_STORE_TIMEOUT` (rejects) past `stateTimeoutMs`: the penalty
   * may or may not have been applied (charging again may charge twice).
   */
  penalty(key: ClientKey, units: number, options?: ClientRuleOptions): Promise<void>
  /**
   * Give a client `units` back (never past a fresh state). Concurrency rules are left out:
   * their slots come back with `release`.
   * @throws OptionsError (rejects) for a bad `units` or nothing keyed.
   * @throws FloodgateError `FG_ERR_STORE_TIMEOUT` (rejects) past `stateTimeoutMs`: the reward
   * may or may not have been applied.
   */
  reward(key: ClientKey, units: number, options?: ClientRuleOptions): Promise<void>
  /**
   * Stop the rules source, end every queued wait (false) and give back what those requests
   * reserved, then close the store. Afterwards `check` and `limit` pass unjudged
   * (`failedOpen`) without a store call, and `release` sends nothing to the store.
   * Resolves within `closeTimeoutMs` whatever the store does, logging what it gave up waiting
   * for; rejects (as an Error) when the store's close fails. Calling it again returns the same
   * promise.
   */
  close(): Promise<void>
}
