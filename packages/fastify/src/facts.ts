// Uses from @floodgate/core: RequestFacts, CompiledRules (per-route rules compiled at startup),
// originLength (where an absolute-form target's path starts).
import {
  originLength,
  type CompiledRules,
  type HeaderBag,
  type RequestFacts,
} from '@floodgate/core/http'
import type { FastifyRequest } from 'fastify'

/**
 * A Fastify request as `RequestFacts`. The route pattern and per-route rules are known from
 * `onRoute`, at startup; the rest is read lazily from the request.
 */
export class FastifyFacts implements RequestFacts<FastifyRequest> {
  constructor(
    readonly request: FastifyRequest,
    /** The route pattern; undefined for a request no route matched (the 404 handler). */
    readonly route: string | undefined,
    readonly cost: number | undefined,
    readonly routeRules: CompiledRules | undefined,
    /** The router ends the path at the first `;` too (`useSemicolonDelimiter`). */
    private readonly semicolons: boolean,
  ) {}

  get method(): string {
    return this.request.method
  }

  /**
   * The path as the router reads it: up to the query string, and with `useSemicolonDelimiter`
   * up to the first `;` (Fastify routes `/users/me;a=1` as `/users/me`). Otherwise as sent: the
   * rule matcher reads its canonical form (`canonicalPath`) once per distinct path, so
   * `POST http://x/login` and `/%6Cogin` meet the rules of `/login`.
   */
  get path(): string {
    const url = this.request.url
    let end = url.indexOf('?')
    if (this.semicolons) {
      // Fastify drops an absolute-form origin first: a `;` in it (`http://x;a/users/me`)
      // does not end the path.
      const semicolon = url.indexOf(';', originLength(url))
      if (semicolon >= 0 && (end < 0 || semicolon < end)) end = semicolon
    }
    return end < 0 ? url : url.slice(0, end)
  }

  /** `ip` once read; null until then. */
  private address: string | undefined | null = null

  /**
   * Fastify's own resolution: `trustProxy` decides whether X-Forwarded-For counts. Kept from
   * the first read (the key builder's): over HTTP/2 a stream whose session closed while the
   * store answered reads no address, and `onDecision` must still see the client decided.
   */
  get ip(): string | undefined {
    if (this.address === null) this.address = this.request.ip
    return this.address
  }

  get headers(): HeaderBag {
    return this.request.headers
  }

  get host(): string | undefined {
    return this.request.hostname.toLowerCase()
  }
}
