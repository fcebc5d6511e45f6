import type { CompiledRules } from './rules/compiled-rules.js'
import type { MatchFacts } from './rules/match-facts.js'

export type { HeaderBag } from './rules/match-facts.js'

/**
 * What an adapter tells the limiter about one request. Adapters fill it from the framework's
 * request; core never imports a framework.
 */
export interface RequestFacts<Req = unknown> extends MatchFacts {
  /** Client IP as the framework resolved it (its trust-proxy setting decides). */
  readonly ip: string | undefined
  /** The route's declared cost; multiplies every matched rule's cost. */
  readonly cost?: number | undefined
  /** Extra rules declared on the route, compiled at startup with `limiter.compileRules`. */
  readonly routeRules?: CompiledRules | undefined
  /** The framework's request, handed to key builders. */
  readonly request?: Req | undefined
}
