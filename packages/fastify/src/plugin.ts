// Uses from @floodgate/core: prepareMount, enforce, routeCost.
import {
  appendExposeHeaders,
  checkExposeHeaders,
  doubleCountGuard,
  EXPOSE_HEADERS,
  exposedHeaderNames,
  enforce,
  handlerAnswer,
  missingAddressWarning,
  prepareMount,
  proxyWarnings,
  PROBLEM_CONTENT_TYPE,
  routeCost,
  validateCost,
  type AdapterOptions,
  type CompiledRules,
  type HttpIo,
  type LimiterInput,
  type ProxyTrust,
  type Rejection,
  type RouteCost,
} from '@floodgate/core/http'
import type { RuleInput } from '@floodgate/core'
import {
  checkBoolean,
  checkKnownKeys,
  checkOneOf,
  optionError,
  refusedOption,
} from '@floodgate/core/options'
import type {
  FastifyInstance,
  FastifyReply,
  FastifyRequest,
  HookHandlerDoneFunction,
  RouteOptions,
} from 'fastify'
import fp from 'fastify-plugin'
import { FastifyFacts } from './facts.js'

/** Per-route settings: `config: { rateLimit: { cost: 10 } }`, or `false` to exempt the route. */
export interface RouteRateLimit {
  /**
   * The route's cost, multiplying every matched rule's cost: a number or a function of the request.
   * @default the plugin's `cost` option, else 1
   */
  readonly cost?: RouteCost<FastifyRequest> | undefined
  /** Extra rules for this route only, validated at startup and decided with the global ones. */
  readonly rules?: readonly RuleInput[] | undefined
}

/** Options of the Fastify plugin. The logger defaults to `fastify.log`. */
export interface FastifyRateLimitOptions extends AdapterOptions<FastifyRequest> {
  /** Rule inputs, a `RulesSource`, or a `Limiter` shared with other apps or adapters. */
  readonly rules: LimiterInput<FastifyRequest>
  /**
   * Answer a rejected request yourself with `reply` (a rule's `onLimit` is `'reject'`).
   * `Retry-After` and the RateLimit headers are already set.
   * @default a problem+json body with the decision's status (429 or 503)
   */
  readonly onRejected?:
    ((request: FastifyRequest, reply: FastifyReply, rejection: Rejection) => void) | undefined
  /**
   * The old name of `onRejected`; works until the next version, with a
   * `FG_WRN_OPTION_RENAMED` warning.
   * @deprecated Use `onRejected`.
   */
  readonly onLimited?:
    ((request: FastifyRequest, reply: FastifyReply, rejection: Rejection) => void) | undefined
  /**
   * Limit requests that match no route (Fastify's 404 handler, default or your own
   * `setNotFoundHandler`) with the global rules: a client probing for paths spends its quota
   * like any other. Rules that match a route pattern do not apply to them (there is none);
   * rules that match the path do.
   * @default true
   */
  readonly limitNotFound?: boolean | undefined
  /**
   * Add the names of the headers the limiter sends (`RateLimit-Policy`, `RateLimit`,
   * `Retry-After`, …) to `Access-Control-Expose-Headers`, after any names already there
   * (register `@fastify/cors` first), so browser scripts on other origins can read them.
   * @default false
   */
  readonly exposeHeaders?: boolean | undefined
  /**
   * The request hook the limiter runs in, as @fastify/rate-limit's `hook` option:
   * `'onRequest'` refuses before the body is read, the cheapest place; `'preHandler'` runs
   * after your authentication hooks (`onRequest`, `preParsing`, `preValidation` and earlier
   * `preHandler` hooks), so rules keyed by `user` see the user they set.
   * @default 'onRequest'
   */
  readonly hook?: 'onRequest' | 'preHandler' | undefined
}

interface Ctx {
  readonly request: FastifyRequest
  readonly reply: FastifyReply
  readonly done: HookHandlerDoneFunction
}

const ROUTE_KEYS = ['cost', 'rules']
const hooksByLimiter = new WeakMap<object, WeakSet<object>>()
// Options Fastify itself reads from `register`'s second argument.
const REGISTER_KEYS = ['prefix', 'logLevel', 'logSerializers']
const OWN_KEYS = ['rules', 'onRejected', 'limitNotFound', 'exposeHeaders', 'hook', ...REGISTER_KEYS]

// Fastify keeps its constructor options under a private symbol; read trustProxy from there,
// walking up from an encapsulated instance. Undefined when a future Fastify moves it.
function trustProxyOf(fastify: FastifyInstance): unknown {
  for (let o: object | null = fastify; o !== null; o = Object.getPrototypeOf(o) as object | null) {
    const sym = Object.getOwnPropertySymbols(o).find((s) => s.description === 'fastify.options')
    if (sym)
      return ((o as Record<symbol, unknown>)[sym] as { trustProxy?: unknown } | undefined)
        ?.trustProxy
  }
  return undefined
}

// Whether Fastify's router ends a path at the first `;` as at a `?`: `routerOptions` wins over
// the deprecated top-level option, as Fastify itself resolves it.
function semicolonDelimiterOf(fastify: FastifyInstance): boolean {
  const config = fastify.initialConfig as {
    readonly useSemicolonDelimiter?: unknown
    readonly routerOptions?: { readonly useSemicolonDelimiter?: unknown } | undefined
  }
  const router = config.routerOptions
  const value =
    router !== undefined && Object.hasOwn(router, 'useSemicolonDelimiter')
      ? router.useSemicolonDelimiter
      : config.useSemicolonDelimiter
  return value === true
}

function routeName(route: RouteOptions): string {
  return `route ${Array.isArray(route.method) ? route.method.join(',') : route.method} ${route.url}`
}

// Read and validate a route's config once, in onRoute: a bad value fails startup, not a request.
function routeSettings(route: RouteOptions): RouteRateLimit | false {
  const value: unknown = (route.config as { rateLimit?: unknown } | undefined)?.rateLimit
  if (value === undefined) return {}
  if (value === false) return false
  const where = `${routeName(route)}: config.rateLimit`
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw optionError(where, 'false or an object', value)
  }
  checkKnownKeys(where, value, ROUTE_KEYS)
  const { cost, rules } = value as RouteRateLimit
  validateCost(cost, `${where}.cost`)
  if (rules !== undefined && !Array.isArray(rules)) {
    throw optionError(`${where}.rules`, 'an array of rules', rules)
  }
  return { cost, rules }
}

async function floodgate(
  fastify: FastifyInstance,
  options: FastifyRateLimitOptions,
): Promise<void> {
  // Before prepareMount, which may build a limiter that a throw would leave open.
  const limitNotFound = checkBoolean('options.limitNotFound', options.limitNotFound, true)
  const exposeOn = checkExposeHeaders(options.exposeHeaders)
  const hookName = checkOneOf('options.hook', options.hook, 'onRequest', [
    'onRequest',
    'preHandler',
  ] as const)
  const {
    limiter,
    owned,
    settings: resolved,
    warn,
  } = prepareMount(
    options.rules,
    options,
    OWN_KEYS,
    // Fastify's logger when it is on; with logger: false (no level), warnings go to stderr.
    typeof fastify.log.level === 'string' ? fastify.log : undefined,
  )
  if (owned) fastify.addHook('onClose', () => limiter.close())
  const trustProxy = trustProxyOf(fastify)
  const semicolons = semicolonDelimiterOf(fastify)
  if (typeof trustProxy === 'number' && trustProxy > 0) {
    // proxy-addr's hop count is not what Fastify 5 does with a number: it trusts nothing.
    warn(
      'FG_WRN_FASTIFY_TRUST_PROXY_COUNT',
      `trustProxy is ${trustProxy}, which Fastify 5 treats as "trust no proxy": request.ip is the proxy's address and every client behind it shares one bucket; set trustProxy to your proxies' addresses or subnets (e.g. '10.0.0.0/8' or 'loopback')`,
    )
  }
  const checkProxy = proxyWarnings(
    warn,
    'trustProxy',
    "set trustProxy to your proxies' addresses or subnets (e.g. '10.0.0.0/8' or 'loopback')",
  )
  const trust: ProxyTrust =
    trustProxy === true
      ? 'all'
      : trustProxy === undefined || trustProxy === false
        ? 'none'
        : // A hop count has its own warning above.
          'some'
  if (!fastify.hasRequestDecorator('rateLimit')) fastify.decorateRequest('rateLimit', undefined)
  await limiter.ready
  const { skip } = resolved
  const expose = exposeOn ? exposedHeaderNames(resolved.format, resolved.shadowHeader) : undefined
  const onRejected = options.onRejected ?? options.onLimited

  const io: HttpIo<Ctx, void | Promise<void>> = {
    response: (c) => c.reply.raw,
    request: (c) => c.request.raw,
    missingAddress: missingAddressWarning(warn, 'trustProxy'),
    // Not called once the head is on the raw response (an earlier hook may have sent it;
    // Fastify's `reply.sent` stays false then): enforce checks reply.raw.headersSent.
    setHeader: (c, name, value) => void c.reply.header(name, value),
    // reply.header lower-cases every name; ours arrive lower-cased already.
    lowerCaseNames: true,
    attach: (c, info) => {
      c.request.rateLimit = info
    },
    proceed: (c) => c.done(),
    reject: (c, rejection) => {
      const reply = c.reply
      const raw = reply.raw
      // Too late for a refusal: end what the earlier hook started; the handler does not run.
      if (raw.headersSent || reply.sent) return void (raw.writableEnded || raw.end())
      // An async handler's rejection reaches done(err), as a throw does.
      if (onRejected) return handlerAnswer(onRejected(c.request, reply, rejection))
      void reply
        .code(rejection.status)
        .header('content-type', PROBLEM_CONTENT_TYPE)
        // A string with a content type skips Fastify's serializer: the same bytes, less work.
        .send(rejection.json)
    },
    // Not calling done() ends the lifecycle here: the handler never runs.
    abandon: () => {},
  }

  // One hook per route, built at startup with the route's pattern, cost and rules bound in:
  // exempt routes pay nothing, and nothing is looked up per request. onRequest (the default)
  // runs before the body is parsed, so a refusal costs the least; with hook: 'preHandler' the
  // route hook runs after every instance-level hook, authentication included.
  // The double-count guard, at startup: a route that already has a hook of this limiter (the
  // plugin registered twice, or the HEAD twin Fastify copies from a GET route) gets no second
  // one. Nothing is marked per request: a request decorator measurably slowed every request.
  let ours = hooksByLimiter.get(limiter)
  if (!ours) hooksByLimiter.set(limiter, (ours = new WeakSet()))
  const mine = ours
  fastify.addHook('onRoute', (route) => {
    const existing = route[hookName]
    const hooks = existing === undefined ? [] : Array.isArray(existing) ? existing : [existing]
    if (hooks.some((h) => mine.has(h))) return
    const settings = routeSettings(route)
    if (settings === false) return
    const cost = settings.cost ?? resolved.cost
    let routeRules
    try {
      routeRules = settings.rules ? limiter.compileRules(settings.rules) : undefined
    } catch (err) {
      throw refusedOption(`${routeName(route)}: config.rateLimit.rules`, (err as Error).message)
    }
    const hook = limitHook(route.url, cost, routeRules)
    mine.add(hook)
    route[hookName] = [...hooks, hook]
  })

  function limitHook(
    pattern: string | undefined,
    cost: RouteCost<FastifyRequest> | undefined,
    routeRules: CompiledRules | undefined,
  ) {
    return function rateLimit(
      request: FastifyRequest,
      reply: FastifyReply,
      done: HookHandlerDoneFunction,
    ): void {
      if (skip?.(request)) return done()
      checkProxy(trust, request.headers)
      if (expose !== undefined && !reply.raw.headersSent) {
        void reply.header(
          EXPOSE_HEADERS,
          appendExposeHeaders(reply.getHeader(EXPOSE_HEADERS), expose),
        )
      }
      const facts = new FastifyFacts(
        request,
        pattern,
        routeCost(cost, request, warn),
        routeRules,
        semicolons,
      )
      const result = enforce(limiter, facts, { request, reply, done }, io, resolved)
      if (result instanceof Promise) result.catch(done)
    }
  }

  if (limitNotFound) {
    // Fastify gives its 404 handler the hooks of the instance, not route hooks: one instance
    // hook that steps aside for every request that found a route (those have their own).
    // A 404 reaches the hook of every registration of this limiter in its instance (the plugin
    // registered twice): only the first charges. The mark is set on 404s only.
    const notFound = limitHook(undefined, resolved.cost, undefined)
    const seen = doubleCountGuard(limiter)
    const rateLimitNotFound = function rateLimitNotFound(
      request: FastifyRequest,
      reply: FastifyReply,
      done: HookHandlerDoneFunction,
    ): void {
      if (!request.is404 || seen(reply)) return done()
      notFound(request, reply, done)
    }
    if (hookName === 'preHandler') fastify.addHook('preHandler', rateLimitNotFound)
    else fastify.addHook('onRequest', rateLimitNotFound)
  }
}

/**
 * Rate-limit a Fastify 5 app with Floodgate. Register it before the routes it should cover.
 *
 * Each route gets an `onRequest` hook (or `preHandler`, see `hook`) built at startup; `config: { rateLimit: false }` exempts a
 * route, `config: { rateLimit: { cost, rules } }` sets its cost and extra rules. Rules match the
 * route pattern (`/users/:id`). Client IPs come from `request.ip`, so `trustProxy` decides
 * whether `X-Forwarded-For` counts.
 *
 * @example
 * await app.register(rateLimit, { rules: [{ id: 'per-ip', limit: 100, window: '1m' }] })
 * app.post('/export', { config: { rateLimit: { cost: 10 } } }, exportHandler)
 */
export const rateLimit: (
  fastify: FastifyInstance,
  options: FastifyRateLimitOptions,
) => Promise<void> = fp(floodgate, { fastify: '5.x', name: '@floodgate/fastify' })
