import type { CompiledRules } from './rules/compiled-rules.js'

/** Header values as Node's `IncomingMessage.headers` holds them (lower-case names). */
export type HeaderBag = Readonly<Record<string, string | string[] | undefined>>

/**
 * What an adapter tells the limiter about one request. Adapters fill it from the framework's
 * request; core never imports a framework.
 */
export interface RequestFacts<Req = unknown> {
  /** Upper-case HTTP method. */
  readonly method: string
  /**
   * The path without the query string, as the client sent it. Rules match its canonical form
   * (`canonicalPath`: no scheme and host, unreserved characters decoded), which the matcher
   * computes once per distinct path, so adapters need not.
   */
  readonly path: string
  /** The route pattern (`/users/:id`) when the framework knows it; rules match it before the path. */
  readonly route?: string | undefined
  /** Client IP as the framework resolved it (its trust-proxy setting decides). */
  readonly ip: string | undefined
  readonly headers: HeaderBag
  /** Host name without port, lower-case. */
  readonly host?: string | undefined
  /** The route's declared cost; multiplies every matched rule's cost. */
  readonly cost?: number | undefined
  /** Extra rules declared on the route, compiled at startup with `limiter.compileRules`. */
  readonly routeRules?: CompiledRules | undefined
  /** The framework's request, handed to key builders. */
  readonly request?: Req | undefined
}
