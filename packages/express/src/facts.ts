// Uses from @floodgate/core: RequestFacts (what the limiter reads about a request), pathOf and
// originLength (the path of a request target).
import { originLength, pathOf, type HeaderBag, type RequestFacts } from '@floodgate/core/http'
import type { Request } from 'express'

/**
 * An Express request as `RequestFacts`. Fields are read lazily, so a rule set that never looks
 * at the host does not pay for `req.hostname`.
 */
export class ExpressFacts implements RequestFacts<Request> {
  constructor(
    readonly request: Request,
    readonly cost: number | undefined,
    /** `trust proxy` is false (the default): the client is the socket's peer. */
    private readonly socketPeer: boolean,
    readonly headers: HeaderBag,
  ) {}

  get method(): string {
    return this.request.method
  }

  /**
   * The full path Express routes: `req.baseUrl + req.url`, which is `req.originalUrl` unless a
   * middleware rewrote `req.url` (a `/v2` prefix stripped), so a rewritten target meets the
   * rules of the handler it reaches. Under a router mounted at a prefix `req.url` is what is
   * left after `req.baseUrl` (`req.path` alone would drop the prefix), its absolute-form origin
   * kept. Passed as sent otherwise: the rule matcher reads its canonical form
   * (`canonicalPath`) once per distinct path, so `POST http://x/login` and `/%6Cogin` meet the
   * rules of `/login`.
   */
  get path(): string {
    const { baseUrl, url } = this.request
    const path = pathOf(url)
    return baseUrl ? baseUrl + path.slice(originLength(path)) : path
  }

  /** The route pattern when mounted on a route (`/users/:id`); unknown in app-level middleware. */
  get route(): string | undefined {
    const path: unknown = (this.request.route as { path?: unknown } | undefined)?.path
    return typeof path === 'string' ? this.request.baseUrl + path : undefined
  }

  /** Express's own resolution: `trust proxy` decides whether X-Forwarded-For counts. */
  get ip(): string | undefined {
    // With `trust proxy` off (the default) Express's req.ip is the socket address; reading it
    // directly skips parsing X-Forwarded-For on every request only to ignore it.
    return this.socketPeer ? this.request.socket.remoteAddress : this.request.ip
  }

  get host(): string | undefined {
    return this.request.hostname?.toLowerCase()
  }
}
