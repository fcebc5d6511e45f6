// Uses from @floodgate/core: RequestFacts (what the limiter reads about a request).
import { canonicalPath, pathOf, type HeaderBag, type RequestFacts } from '@floodgate/core/http'
import type { Context } from 'koa'

/**
 * A Koa context as `RequestFacts`, read lazily. Fields Koa delegates from `ctx` to
 * `ctx.request` are read there directly: the same getters, one call fewer.
 */
export class KoaFacts implements RequestFacts<Context> {
  constructor(
    readonly request: Context,
    readonly cost: number | undefined,
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

  /** Koa's own resolution: `app.proxy` (and `maxIpsCount`) decide whether X-Forwarded-For counts. */
  get ip(): string | undefined {
    return this.request.request.ip
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
