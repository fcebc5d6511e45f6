// Uses from @floodgate/core: prepareMount, firstCheck, enforce, routeCost.
import {
  appendExposeHeaders,
  checkExposeHeaders,
  enforce,
  EXPOSE_HEADERS,
  exposedHeaderNames,
  firstCheck,
  handlerAnswer,
  missingAddressWarning,
  prepareMount,
  proxyWarnings,
  routeCost,
  writeProblem,
  type AdapterOptions,
  type HttpIo,
  type LimiterInput,
  type ProxyTrust,
  type Rejection,
} from '@floodgate/core/http'
import { type Limiter } from '@floodgate/core'
import type { NextFunction, Request, RequestHandler, Response } from 'express'
import { ExpressFacts } from './facts.js'
import { attachInfo } from './request-info.js'

/**
 * Options of the Express middleware: the options shared by every Floodgate adapter, plus an
 * Express-shaped rejection handler.
 */
export interface ExpressRateLimitOptions extends AdapterOptions<Request> {
  /**
   * Answer a rejected request yourself (a rule's `onLimit` is `'reject'`). `Retry-After` and the
   * RateLimit headers are already set.
   * @default a problem+json body with the decision's status (429 or 503)
   * @example
   * onRejected: (req, res, _next, { status, body }) => res.status(status).json({ error: body.detail })
   */
  readonly onRejected?:
    ((req: Request, res: Response, next: NextFunction, rejection: Rejection) => void) | undefined
  /**
   * The old name of `onRejected`; works until the next version, with a
   * `FG_WRN_OPTION_RENAMED` warning.
   * @deprecated Use `onRejected`.
   */
  readonly onLimited?:
    ((req: Request, res: Response, next: NextFunction, rejection: Rejection) => void) | undefined
  /**
   * Add the names of the headers the limiter sends (`RateLimit-Policy`, `RateLimit`,
   * `Retry-After`, …) to `Access-Control-Expose-Headers`, after any names already there (mount
   * the `cors` middleware first), so browser scripts on other origins can read them.
   * @default false
   */
  readonly exposeHeaders?: boolean | undefined
}

/** The middleware, with the limiter it uses (to share it, read counters, or `close()` it). */
export type RateLimitMiddleware = RequestHandler & { readonly limiter: Limiter<Request> }

interface Ctx {
  readonly req: Request
  readonly res: Response
  readonly next: NextFunction
}

/**
 * `req.app`, read from the request's prototype (Express's `app.request`, where Express keeps it)
 * unless the request has an `app` of its own: a read of the prototype hits V8's inline cache, a
 * read of the request misses it, since Express gives each request a new hidden class.
 */
function appOf(req: Request): Request['app'] {
  if (Object.hasOwn(req, 'app')) return req.app
  return (Object.getPrototypeOf(req) as { app: Request['app'] }).app
}

// Express keeps the setting as given: false (the default), true, a hop count, or addresses.
function trustOf(setting: unknown): ProxyTrust {
  return setting === true ? 'all' : setting === false || setting === undefined ? 'none' : 'some'
}

/**
 * Rate-limit Express requests with Floodgate.
 *
 * Mount it app-wide, on a router, or on one route. Client IPs come from `req.ip`, so Express's
 * `trust proxy` setting decides whether `X-Forwarded-For` counts. A route's cost comes from a
 * rule (`match: 'POST /export', cost: 10`) or from mounting on the route with `cost`. One
 * limiter mounted twice on a request path charges once (the first mount decides).
 *
 * @param rules - rule inputs, a `RulesSource`, or a `Limiter` shared with other mounts
 * @param options - adapter options; limiter options only when `rules` is not a Limiter
 * @returns the middleware, a function named `rateLimit`
 * @throws RulesValidationError or OptionsError at construction, never on a request
 * @example
 * app.use(rateLimit([{ id: 'per-ip', limit: 100, window: '1m' }]))
 * app.post('/export', rateLimit(limiter, { cost: 10 }), exportHandler)
 */
export function rateLimit(
  rules: LimiterInput<Request>,
  options: ExpressRateLimitOptions = {},
): RateLimitMiddleware {
  const exposeOn = checkExposeHeaders(options.exposeHeaders)
  const mount = prepareMount(rules, options, ['onRejected', 'exposeHeaders'])
  const { limiter, settings, warn } = mount
  const expose = exposeOn ? exposedHeaderNames(settings.format, settings.shadowHeader) : undefined
  const shouldCheck = firstCheck(mount, (req: Request) => req.originalUrl)
  const { skip, cost } = settings
  const onRejected = options.onRejected ?? options.onLimited
  const checkProxy = proxyWarnings(
    warn,
    "app.set('trust proxy')",
    "set app.set('trust proxy', n) to the number of proxies in front of the app, or to their addresses or subnets",
  )

  const io: HttpIo<Ctx, void | Promise<void>> = {
    response: (c) => c.res,
    request: (c) => c.req,
    missingAddress: missingAddressWarning(warn, "app.set('trust proxy')"),
    // Not `c.req.rateLimit = info`: a property added to an Express request costs every later
    // read of it (see request-info.ts).
    attach: (c, info) => attachInfo(c.req, info),
    proceed: (c) => c.next(),
    reject: (c, rejection) => {
      // Too late for a 429: end what the earlier middleware started, without the handler.
      if (c.res.headersSent) return void (c.res.writableEnded || c.res.end())
      // An async handler's rejection reaches next(err) (result.catch below), as a throw does.
      if (onRejected) return handlerAnswer(onRejected(c.req, c.res, c.next, rejection))
      writeProblem(c.res, rejection)
    },
    abandon: () => {},
  }

  // Every property read of an Express request or response is a hidden-class miss (Express swaps
  // their prototypes per request), so each is read once here and handed on.
  const middleware = function rateLimit(req: Request, res: Response, next: NextFunction): void {
    const locals: object = res.locals
    if (skip?.(req) || !shouldCheck(locals, req)) return next()
    if (expose !== undefined && !res.headersSent) {
      res.setHeader(EXPOSE_HEADERS, appendExposeHeaders(res.getHeader(EXPOSE_HEADERS), expose))
    }
    const trust: unknown = (appOf(req).settings as Record<string, unknown>)['trust proxy']
    const headers = req.headers
    checkProxy(trustOf(trust), headers)
    const facts = new ExpressFacts(req, routeCost(cost, req, warn), trust === false, headers)
    const result = enforce(limiter, facts, { req, res, next }, io, settings)
    // Express 4 ignores a returned promise; hand any failure to the error handler ourselves.
    if (result instanceof Promise) result.catch(next)
  }
  return Object.assign(middleware, { limiter })
}
