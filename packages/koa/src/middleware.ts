// Uses from @floodgate/core: prepareMount, firstCheck, enforce, routeCost.
import {
  appendExposeHeaders,
  checkExposeHeaders,
  enforce,
  EXPOSE_HEADERS,
  exposedHeaderNames,
  firstCheck,
  missingAddressWarning,
  prepareMount,
  proxyWarnings,
  PROBLEM_CONTENT_TYPE,
  routeCost,
  type AdapterOptions,
  type HttpIo,
  type LimiterInput,
  type Rejection,
} from '@floodgate/core/http'
import { type Limiter } from '@floodgate/core'
import type { Context, Middleware, Next } from 'koa'
import { KoaFacts } from './facts.js'
import { koaIpCache } from './ip-cache.js'

/** Options of the Koa middleware: the options shared by every Floodgate adapter, plus a Koa-shaped rejection handler. */
export interface KoaRateLimitOptions extends AdapterOptions<Context> {
  /**
   * Answer a rejected request yourself (a rule's `onLimit` is `'reject'`). `Retry-After` and the
   * RateLimit headers are already set.
   * @default a problem+json body with the decision's status (429 or 503)
   * @example
   * onRejected: (ctx, { status, body }) => { ctx.status = status; ctx.body = { error: body.detail } }
   */
  readonly onRejected?: ((ctx: Context, rejection: Rejection) => void | Promise<void>) | undefined
  /**
   * The old name of `onRejected`; works until the next version, with a
   * `FG_WRN_OPTION_RENAMED` warning.
   * @deprecated Use `onRejected`.
   */
  readonly onLimited?: ((ctx: Context, rejection: Rejection) => void | Promise<void>) | undefined
  /**
   * Add the names of the headers the limiter sends (`RateLimit-Policy`, `RateLimit`,
   * `Retry-After`, …) to `Access-Control-Expose-Headers`, after any names already there (mount
   * `@koa/cors` first), so browser scripts on other origins can read them.
   * @default false
   */
  readonly exposeHeaders?: boolean | undefined
}

/** The middleware, with the limiter it uses (to share it, read counters, or `close()` it). */
export type RateLimitMiddleware = Middleware & { readonly limiter: Limiter<Context> }

interface Ctx {
  readonly ctx: Context
  readonly next: Next
}

/**
 * Rate-limit Koa requests with Floodgate.
 *
 * Mount it app-wide (`app.use`) or on a @koa/router route, where rules match the route pattern.
 * Client IPs come from `ctx.ip`: with `app.proxy` set, also set `app.maxIpsCount` to the number
 * of proxies you trust, or the client picks its own IP (a warning says so once).
 *
 * @param rules - rule inputs, a `RulesSource`, or a `Limiter` shared with other mounts
 * @param options - adapter options; limiter options only when `rules` is not a Limiter
 * @returns the middleware, a function named `rateLimit`
 * @throws RulesValidationError or OptionsError at construction, never on a request
 * @example
 * app.use(rateLimit([{ id: 'per-ip', limit: 100, window: '1m' }]))
 * router.post('/export', rateLimit(limiter, { cost: 10 }), exportHandler)
 */
export function rateLimit(
  rules: LimiterInput<Context>,
  options: KoaRateLimitOptions = {},
): RateLimitMiddleware {
  const exposeOn = checkExposeHeaders(options.exposeHeaders)
  const mount = prepareMount(rules, options, ['onRejected', 'exposeHeaders'])
  const { limiter, settings, warn } = mount
  const expose = exposeOn ? exposedHeaderNames(settings.format, settings.shadowHeader) : undefined
  const shouldCheck = firstCheck(mount, (ctx: Context) => ctx.originalUrl)
  const { skip, cost } = settings
  const onRejected = options.onRejected ?? options.onLimited
  let proxyChecked = false
  // Where this app's Koa keeps ctx.request.ip, found for the last app seen (one, nearly always).
  let ipApp: unknown
  let ipCache: symbol | undefined
  const checkProxy = proxyWarnings(
    warn,
    'app.proxy',
    'set app.proxy = true and app.maxIpsCount to the number of proxies in front of the app',
  )

  const io: HttpIo<Ctx, void | Promise<void>> = {
    response: (c) => c.ctx.res,
    request: (c) => c.ctx.req,
    missingAddress: missingAddressWarning(warn, 'app.proxy'),
    attach: (c, info) => {
      c.ctx.state.rateLimit = info
    },
    proceed: (c) => c.next(),
    reject: ({ ctx }, rejection) => {
      // Too late for a 429: Koa ends what the earlier middleware started; no handler runs.
      if (ctx.res.headersSent) return
      if (onRejected) return onRejected(ctx, rejection)
      ctx.status = rejection.status
      // Set before the body, so Koa keeps it instead of guessing text/plain.
      ctx.set('Content-Type', PROBLEM_CONTENT_TYPE)
      ctx.body = rejection.json
    },
    abandon: (c) => {
      // The socket is gone: Koa must not try to write a 404 to it.
      c.ctx.respond = false
    },
  }

  const middleware = function rateLimit(ctx: Context, next: Next): void | Promise<void> {
    if (!proxyChecked) {
      proxyChecked = true
      // Koa's app is only known here; with proxy on and maxIpsCount 0, ctx.ip is the leftmost
      // X-Forwarded-For entry, which the client writes (docs/security.md#client-address-and-proxies).
      if (ctx.app.proxy && !(ctx.app.maxIpsCount > 0)) {
        warn(
          'FG_WRN_KOA_PROXY_LEFTMOST_IP',
          'app.proxy is on and app.maxIpsCount is 0, so ctx.ip is the leftmost X-Forwarded-For entry, which the client chooses; set app.maxIpsCount to the number of proxies in front of the app',
        )
      }
    }
    if (skip?.(ctx) || !shouldCheck(ctx, ctx)) return next()
    if (expose !== undefined && !ctx.headerSent) {
      ctx.set(EXPOSE_HEADERS, appendExposeHeaders(ctx.response.get(EXPOSE_HEADERS), expose))
    }
    // app.proxy with maxIpsCount 0 (trust all) has its own warning above.
    checkProxy(ctx.app.proxy ? 'some' : 'none', ctx.request.headers)
    if (ctx.app !== ipApp) {
      ipApp = ctx.app
      ipCache = koaIpCache(ctx.app)
    }
    const facts = new KoaFacts(ctx, routeCost(cost, ctx, warn), ipCache)
    return enforce(limiter, facts, { ctx, next }, io, settings) as void | Promise<void>
  }
  return Object.assign(middleware, { limiter })
}
