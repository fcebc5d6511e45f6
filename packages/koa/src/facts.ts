// Uses from @floodgate/core: RequestFacts (what the limiter reads about a request).
import { canonicalPath, pathOf, type HeaderBag, type RequestFacts } from '@floodgate/core/http'
import type { Context } from 'koa'

/**
 * A Koa context as `RequestFacts`, read lazily. Fields Koa delegates from `ctx` to
 * `ctx.request` are read there directly: the same getters, one call fewer.
 */
export class KoaFacts implements RequestFacts<Context> {
  /**
   * @param request - the Koa context
   * @param cost - the mount's cost for this request
   * @param ipCache - where Koa keeps `ctx.request.ip` for this app (see `koaIpCache`), or
   *   undefined to read Koa's getter
   */
  constructor(
    readonly request: Context,
    readonly cost: number | undefined,
    private readonly ipCache: symbol | undefined,
  ) {}

  get method(): string {
    return this.request.request.method
  }

  /**
   * The full path, also under koa-mount (which rewrites `ctx.path`). Passed as sent: the rule
   * matcher reads its canonical form (`canonicalPath`) once per distinct path, so
   * `POST http://x/login` and `/%6Cogin` meet the rules of `/login`.
   */
  get path(): string {
    return pathOf(this.request.originalUrl)
  }

  /**
   * The route pattern @koa/router matched (`/users/:id`), when mounted after routing, with the
   * prefix of any koa-mount around the router put back: koa-mount strips its prefix from
   * `ctx.path`, so the router matched `/users/:id` for `/api/users/42`, and rules are written
   * against the full path.
   */
  get route(): string | undefined {
    const matched: unknown = (this.request as { _matchedRoute?: unknown })._matchedRoute
    if (typeof matched !== 'string') return undefined
    const routed = this.request.request.path
    const full = pathOf(this.request.originalUrl)
    if (routed === full) return matched
    return mountPrefix(canonicalPath(full), canonicalPath(routed)) + matched
  }

  /**
   * Koa's own resolution: `app.proxy` (and `maxIpsCount`) decide whether X-Forwarded-For counts.
   * Without a proxy, Koa's answer is the address it cached (or an earlier middleware set) and
   * else the socket's, which it then caches: done here directly when `koaIpCache` found where
   * Koa keeps it.
   */
  get ip(): string | undefined {
    const ctx = this.request
    const key = this.ipCache
    if (key === undefined || ctx.app.proxy) return ctx.request.ip
    const request = ctx.request as unknown as Record<symbol, string | undefined>
    const cached = request[key]
    if (cached) return cached
    // Kept where Koa's getter keeps it, as it does: a later read (this one or ctx.ip) answers the
    // same address after the socket has closed and no longer tells it.
    return (request[key] = ctx.req.socket.remoteAddress || '')
  }

  get headers(): HeaderBag {
    return this.request.request.headers
  }

  get host(): string | undefined {
    return this.request.request.hostname.toLowerCase()
  }
}

/**
 * What a mount stripped from the full path to leave the routed one: `/api` for `/api/users/42`
 * routed as `/users/42`, and for `/api` routed as `/` (koa-mount's answer for its own prefix).
 * Empty when the routed path is not what is left of the full path after a prefix (a rewrite):
 * the router's pattern is then taken as it is.
 */
function mountPrefix(full: string, routed: string): string {
  if (routed === '/') return full.endsWith('/') ? full.slice(0, -1) : full
  return full.length > routed.length && full.endsWith(routed)
    ? full.slice(0, full.length - routed.length)
    : ''
}
