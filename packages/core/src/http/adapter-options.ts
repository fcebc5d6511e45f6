import {
  checkBoolean,
  checkFunction,
  checkLogger,
  checkOneOf,
  optionError,
  renamedOption,
} from '../options/checks.js'
import type { ErrorCode } from '../errors.js'
import { HEADER_FORMATS, type HeaderFormat } from './headers.js'
import { silentLogger, type Logger } from '../logger.js'
import type { Decision, DecisionStatus } from '../decision.js'
import type { LimiterOptions, RequestOutcome } from '../limiter-types.js'
import type { ServerResponse } from 'node:http'

/** A route's cost: a number, or a function of the request (e.g. by page size). */
export type RouteCost<Req> = number | ((req: Req) => number)

/** The JSON body of a refusal (RFC 9457 problem details), sent as `application/problem+json`. */
export interface ProblemDetails {
  readonly type: string
  readonly title: string
  readonly status: Exclude<DecisionStatus, 200>
  readonly detail: string
  /** Ids of the rules that refused the request (empty for a deny-list or unmatched refusal). */
  readonly 'violated-policies': readonly string[]
  /**
   * Whole seconds until the request could pass; equals the `Retry-After` header. Absent when
   * waiting would not help: a client on the deny list, a request no rule matches.
   */
  readonly retryAfter?: number | undefined
}

/**
 * Everything an adapter knows about a refusal, handed to the app's `onRejected` handler. The
 * headers (`Retry-After`, and the RateLimit headers unless turned off) are already set on the
 * response when the handler runs.
 */
export interface Rejection {
  readonly status: Exclude<DecisionStatus, 200>
  readonly body: ProblemDetails
  /** `body` serialised: what the default handler sends as `application/problem+json`. */
  readonly json: string
  readonly decision: Decision
}

/**
 * Limiter options an adapter accepts when it builds its own limiter from rules: `store`,
 * `keys`, `ipv6Subnet`, `clock`, `decisionTimeoutMs`, `onDecision` (see `createLimiter`).
 */
export type AdapterLimiterOptions<Req> = Omit<LimiterOptions<Req>, 'rules' | 'logger'>

/**
 * Options every adapter (`@floodgate/express`, `@floodgate/fastify`, `@floodgate/koa`) accepts
 * under the same names. Limiter options (`store`, `keys`, …) are only allowed when the adapter
 * builds its own limiter from rules; a shared `Limiter` carries its own.
 *
 * @typeParam Req - the framework's request type, handed to `keys`, `skip` and `cost`
 */
export interface AdapterOptions<Req> extends AdapterLimiterOptions<Req> {
  /**
   * Requests for which the limiter is not consulted at all (health checks, internal callers).
   * Only `true` skips. A `skip` that throws, or answers anything but a boolean (a promise: it
   * is synchronous), checks the request and logs `FG_WRN_SKIP_INVALID` once.
   * @default undefined (no request is skipped)
   */
  readonly skip?: ((req: Req) => boolean) | undefined
  /**
   * Which rate-limit headers to write: a {@link HeaderFormat}, `true` for `'ietf'`
   * (draft-ietf-httpapi-ratelimit-headers-11), `false` for none. `Retry-After` is sent on every
   * 429 and 503 regardless: it is part of what those statuses mean (RFC 9110).
   * @default true
   */
  readonly headers?: boolean | HeaderFormat | undefined
  /**
   * Write `Floodgate-Shadow: <rule ids>` when a shadow rule would have refused the request.
   * Off by default because it tells clients about rules you are still trying out.
   * @default false
   */
  readonly shadowHeader?: boolean | undefined
  /**
   * The cost of each request through this mount, multiplying every matched rule's cost. Use it
   * when mounting on one route (`app.post('/export', rateLimit(limiter, { cost: 10 }), h)`).
   * @default 1
   */
  readonly cost?: RouteCost<Req> | undefined
  /**
   * Whether a finished response counts as a success, for rules with `count: 'failed'` (only
   * failures stay counted: failed logins) or `count: 'successful'`. Called when the response
   * has finished; a response that did not finish (the client went away) is a failure. A
   * function that throws or answers something other than a boolean counts the request as
   * failed and logs `FG_WRN_OUTCOME_INVALID` once.
   * @default (req, res) => res.statusCode < 400
   * @example
   * requestWasSuccessful: (req, res) => res.statusCode !== 401
   */
  readonly requestWasSuccessful?: ((req: Req, res: ServerResponse) => boolean) | undefined
  /**
   * Where adapter warnings go (a double mount, a bad cost function). A limiter built from rules
   * logs here too.
   * @default a silent logger (Fastify: `fastify.log`)
   */
  readonly logger?: Logger | undefined
  /**
   * Warn about misconfiguration, once each: an unknown option (with what to write instead when
   * it is another rate limiter's spelling), a proxy setting that lets clients choose their
   * address or hides them behind the proxy's, a limiter mounted twice. Warnings go to `logger`
   * (Fastify: `fastify.log`), else to stderr. `false` turns them all off.
   * @default true
   */
  readonly warnings?: boolean | undefined
}

/**
 * Options of express-rate-limit, @fastify/rate-limit and koa-ratelimit that Floodgate spells
 * differently, and what to write instead: an app moving over gets a pointer rather than a
 * silently ignored option.
 */
export const PEER_OPTION_HINTS: Readonly<Record<string, string>> = {
  max: "a rule's limit: rules: [{ id: 'per-ip', limit: 100, window: '1m' }]",
  limit: "a rule's limit: rules: [{ id: 'per-ip', limit: 100, window: '1m' }]",
  windowMs: "a rule's window: rules: [{ id: 'per-ip', limit: 100, window: '15m' }]",
  timeWindow: "a rule's window: rules: [{ id: 'per-ip', limit: 100, window: '1m' }]",
  message: 'onRejected, which answers a rejected request yourself',
  errorResponseBuilder: 'onRejected, which answers a rejected request yourself',
  handler: 'onRejected, which answers a rejected request yourself',
  statusCode: "a rule's onLimit: { action: 'reject', status: 503 } (429 by default)",
  standardHeaders: "headers: 'draft-7' (or true for the current IETF draft)",
  legacyHeaders: "headers: 'legacy' or 'both'",
  keyGenerator:
    "a rule's key (key: ip, header:<name>, user, custom:<name>) with keys: { user: (req) => … }",
  skipSuccessfulRequests: "count: 'failed' on the rule (see docs/rules.md)",
  skipFailedRequests: "count: 'successful' on the rule (see docs/rules.md)",
  allowList: "allow: { ips: ['10.0.0.0/8'], keys: { 'header:x-api-key': ['…'] } }",
  whitelist: "allow: { ips: ['10.0.0.0/8'] } for a list, or skip: (req) => boolean for a function",
  validate: 'warnings: false, which turns every adapter warning off',
  // @fastify/rate-limit
  ban: "a rule's ban: { after: 5, within: '1m', for: '10m' }",
  cache: 'store: new MemoryStore({ maxKeys: 5000 })',
  redis: "store: createRedisStore({ client: redis }) from '@floodgate/redis'",
  nameSpace: "the prefix of a RedisStore: createRedisStore({ client: redis, prefix: 'rl' })",
  groupId: "a rule's id and key: routes that one rule matches share its budget",
  enableDraftSpec: 'headers: true (the IETF RateLimit headers, the default)',
  addHeaders: "headers: 'ietf', 'draft-7', 'legacy', 'both' or false",
  addHeadersOnExceeding: "headers: 'ietf', 'draft-7', 'legacy', 'both' or false",
  onExceeding: 'onDecision(decision, facts), a limiter option that sees every decision',
  onExceeded: 'onDecision(decision, facts), a limiter option that sees every decision',
  onBanReach: 'onDecision(decision, facts), a limiter option that sees every decision',
  // koa-ratelimit
  duration: "a rule's window: rules: [{ id: 'per-ip', limit: 100, window: '1h' }]",
  id: "a rule's key (key: ip, header:<name>, user, custom:<name>) with keys: { user: (ctx) => … }",
  driver:
    "store: a MemoryStore (the default) or createRedisStore({ client: redis }) from '@floodgate/redis'",
  db: "store: createRedisStore({ client: redis }) from '@floodgate/redis'",
  namespace: "the prefix of a RedisStore: createRedisStore({ client: redis, prefix: 'rl' })",
  errorMessage: 'onRejected, which answers a rejected request yourself',
  throw: 'onRejected, which answers a rejected request yourself (throw from it)',
  status: "a rule's onLimit: { action: 'reject', status: 503 } (429 by default)",
  disableHeader: 'headers: false',
  blacklist: "deny: { ips: ['203.0.113.0/24'], keys: { 'header:x-api-key': ['…'] } }",
  blocklist: "deny: { ips: ['203.0.113.0/24'], keys: { 'header:x-api-key': ['…'] } }",
  allowlist: "allow: { ips: ['10.0.0.0/8'] } for a list, or skip: (req) => boolean for a function",
}

/** Option names known to {@link validateAdapterOptions}, beyond the adapter's own. */
export const ADAPTER_OPTION_KEYS: readonly string[] = [
  'skip',
  'headers',
  'shadowHeader',
  'cost',
  'logger',
  'onRejected',
  'onLimited',
  'warnings',
  'requestWasSuccessful',
]

/** Options a limiter is built from; refused next to a shared Limiter. */
export const LIMITER_OPTION_KEYS: readonly string[] = [
  'store',
  'keys',
  'ipv6Subnet',
  'clock',
  'decisionTimeoutMs',
  'timeoutMs',
  'stateTimeoutMs',
  'closeTimeoutMs',
  'onDecision',
  'failOpenLogIntervalMs',
  'allow',
  'deny',
  'denyStatus',
  'unmatched',
  'limits',
]

/** Adapter options after validation; internal to adapters. */
export interface ResolvedAdapterOptions<Req> {
  readonly skip: ((req: Req) => boolean) | undefined
  /** The header format, or undefined for no RateLimit headers. */
  readonly format: HeaderFormat | undefined
  readonly shadowHeader: boolean
  readonly cost: RouteCost<Req> | undefined
  readonly warnings: boolean
  /** The app's `requestWasSuccessful`, as given. */
  readonly requestWasSuccessful: ((req: Req, res: ServerResponse) => boolean) | undefined
  /**
   * How a finished response ended, for rules that count by outcome; never throws. Set by
   * `prepareMount` from `requestWasSuccessful`.
   */
  readonly outcomeOf?: ((req: Req | undefined, res: ServerResponse) => RequestOutcome) | undefined
}

/**
 * Check a route cost, throwing at startup when it is not a positive finite number or a function.
 *
 * @param cost - the cost to check
 * @param path - where it was given, for the message (`options.cost`)
 * @returns the cost, unchanged
 * @throws OptionsError when the cost is invalid
 */
export function validateCost<Req>(cost: unknown, path: string): RouteCost<Req> | undefined {
  if (cost === undefined) return undefined
  if (typeof cost === 'function') return cost as (req: Req) => number
  if (typeof cost !== 'number' || !Number.isFinite(cost) || cost <= 0) {
    throw optionError(path, 'a positive number or a function', cost)
  }
  return cost
}

/**
 * Validate the shared adapter options once, at construction: bad values throw, unknown keys
 * are reported through `warn` (a typo such as `header: false` would otherwise be ignored).
 *
 * @param options - the options the app passed
 * @param ownKeys - option names the adapter itself adds (`rules`, `onRejected`, …)
 * @param warn - called once per unknown option name (code `FG_WRN_OPTION_UNKNOWN`), and for an
 *   option given under its old name (`FG_WRN_OPTION_RENAMED`)
 * @returns the normalised options
 * @throws OptionsError naming the option and the value received
 */
export function validateAdapterOptions<Req>(
  options: AdapterOptions<Req>,
  ownKeys: readonly string[],
  warn: (message: string, code?: ErrorCode) => void,
): ResolvedAdapterOptions<Req> {
  if (typeof options !== 'object' || options === null)
    throw optionError('options', 'an object', options)
  for (const key of Object.keys(options)) {
    if (
      !ADAPTER_OPTION_KEYS.includes(key) &&
      !LIMITER_OPTION_KEYS.includes(key) &&
      !ownKeys.includes(key)
    ) {
      const hint = Object.hasOwn(PEER_OPTION_HINTS, key) ? PEER_OPTION_HINTS[key] : undefined
      warn(
        hint === undefined
          ? `options.${key} is not a Floodgate option and is ignored`
          : `options.${key} is not a Floodgate option and is ignored; write ${hint}`,
      )
    }
  }
  const { skip, headers = true, shadowHeader = false, cost } = options
  checkFunction('options.skip', skip)
  checkLogger('options.logger', (options as Record<string, unknown>)['logger'])
  const format = checkOneOf<boolean | HeaderFormat>('options.headers', headers, true, [
    true,
    false,
    ...HEADER_FORMATS,
  ])
  const warnings = checkBoolean('options.warnings', options.warnings, true)
  checkBoolean('options.shadowHeader', shadowHeader, false)
  // onLimited is onRejected's old name: said through the adapter's own warner, with its code.
  const renameLog: Logger = {
    ...silentLogger,
    warn: (_obj, msg) => warn(msg ?? '', 'FG_WRN_OPTION_RENAMED'),
  }
  const onRejected = renamedOption(options, 'onLimited', 'onRejected', 'rateLimit', renameLog)
  checkFunction(`options.${onRejected.name}`, onRejected.value)
  const requestWasSuccessful = checkFunction(
    'options.requestWasSuccessful',
    options.requestWasSuccessful,
  )
  return {
    skip,
    format: format === true ? 'ietf' : format === false ? undefined : format,
    shadowHeader,
    warnings,
    cost: validateCost<Req>(cost, 'options.cost'),
    requestWasSuccessful,
  }
}
