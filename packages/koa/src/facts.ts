// Uses from @floodgate/core: RequestFacts (what the limiter reads about a request).
import { pathOf, type HeaderBag, type RequestFacts } from '@floodgate/core/http'
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

  /** The route pattern @koa/router matched (`/users/:id`), when mounted after routing. */
  get route(): string | undefined {
    const matched: unknown = (this.request as { _matchedRoute?: unknown })._matchedRoute
    return typeof matched === 'string' ? matched : undefined
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
