/** Header values as Node's `IncomingMessage.headers` holds them (lower-case names). */
export type HeaderBag = Readonly<Record<string, string | string[] | undefined>>

/**
 * The part of a request that rule matching reads. `RequestFacts` extends it; rules never need
 * the rest (cost, route rules, the framework's request).
 */
export interface MatchFacts {
  /** Upper-case HTTP method. */
  readonly method: string
  /**
   * The path as the client sent it (a query string may be left on). Rules match its canonical
   * form (`canonicalPath`: no scheme and host, printable characters decoded), which the matcher
   * computes once per distinct path, so adapters need not.
   */
  readonly path: string
  /** The route pattern (`/users/:id`) when the framework knows it; rules match it before the path. */
  readonly route?: string | undefined
  readonly headers: HeaderBag
  /** Host name without port, lower-case. */
  readonly host?: string | undefined
}
