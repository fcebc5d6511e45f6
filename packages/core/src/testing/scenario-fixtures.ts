import type { DecisionReason } from '../decision.js'
import type { ScenarioExpect, ScenarioRequest, ScenarioRoute } from './scenario-types.js'

// What the rows of the adapter scenario table are written with: requests, bodies and headers.

export const GET = (path: string, headers?: Record<string, string>): ScenarioRequest => ({
  method: 'GET',
  path,
  ...(headers ? { headers } : {}),
})
export const OK = { ok: true }
export const JSON_TYPE = 'application/json; charset=utf-8'
export const PROBLEM_TYPE = 'application/problem+json; charset=utf-8'
/** The routes of a scenario that lists none. */
export const DEFAULT_ROUTES: readonly ScenarioRoute[] = [
  { method: 'GET', path: '/' },
  { method: 'GET', path: '/users/:id' },
]

/** No RateLimit headers at all (fail-open, exempt, skipped). */
export const NO_LIMIT_HEADERS = {
  'ratelimit-policy': undefined,
  ratelimit: undefined,
  'retry-after': undefined,
}

export const FORWARDED = (ip: string, headers: Record<string, string> = {}): ScenarioRequest =>
  GET('/', { 'x-forwarded-for': ip, ...headers })

export function problem(status: 429 | 503, ids: string[], retryAfter: number): object {
  return {
    type: 'about:blank',
    title: status === 503 ? 'Service Unavailable' : 'Too Many Requests',
    status,
    detail: `Rate limit exceeded (${ids.join(', ')}); retry in ${retryAfter} s.`,
    'violated-policies': ids,
    retryAfter,
  }
}

/** The problem+json body of a request refused before counting (deny list, unmatched). */
export function refused(
  status: 403 | 404 | 503,
  reason: Exclude<DecisionReason, 'allow-list'>,
): object {
  return {
    type: 'about:blank',
    title: { 403: 'Forbidden', 404: 'Not Found', 503: 'Service Unavailable' }[status],
    status,
    detail:
      reason === 'deny-list'
        ? 'This client is not allowed to use this service.'
        : 'This client is not known to the rules.',
    'violated-policies': [],
  }
}

/** A request a deny list refuses: 403, no RateLimit headers. */
export const DENIED: ScenarioExpect = {
  status: 403,
  headers: { ...NO_LIMIT_HEADERS, 'content-type': PROBLEM_TYPE },
  body: refused(403, 'deny-list'),
}
