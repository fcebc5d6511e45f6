import type { Decision } from '../decision.js'
import { retryAfterSeconds } from './headers.js'
import type { Rule } from '../rules/rule.js'
import type { ProblemDetails } from './adapter-options.js'

/** Content type of a refusal body (charset spelled out, as Fastify would add it anyway). */
export const PROBLEM_CONTENT_TYPE = 'application/problem+json; charset=utf-8'

const TITLES: Readonly<Record<ProblemDetails['status'], string>> = {
  403: 'Forbidden',
  404: 'Not Found',
  429: 'Too Many Requests',
  503: 'Service Unavailable',
}

/**
 * The problem+json body for a refused decision: `type`, `title`, `status`, `detail`,
 * `violated-policies` (ids of the refusing rules) and `retryAfter` (seconds, as in the
 * `Retry-After` header).
 *
 * @param decision - a decision whose action is `reject`
 * @returns the body, ready for `JSON.stringify`
 */
export function problemDetails(decision: Decision): ProblemDetails {
  const reason = decision.reason
  if (reason === 'deny-list' || reason === 'unmatched') {
    const status = decision.status === 200 ? 403 : decision.status
    return {
      type: 'about:blank',
      title: TITLES[status],
      status,
      detail:
        reason === 'deny-list'
          ? 'This client is not allowed to use this service.'
          : 'This client is not known to the rules.',
      'violated-policies': [],
    }
  }
  const status = decision.status === 503 ? 503 : 429
  const violated: string[] = []
  for (const o of decision.outcomes) {
    if (!o.allowed && !o.shadow && !violated.includes(o.rule.id)) violated.push(o.rule.id)
  }
  if (violated.length === 0 && decision.rule) violated.push(decision.rule.id)
  const retryAfter = retryAfterSeconds(decision.retryAfterMs)
  // An adaptive rule refuses because the service is busy, not because the client used a quota.
  const shed = decision.rule?.algorithm === 'adaptive'
  return {
    type: 'about:blank',
    title: TITLES[status],
    status,
    detail: `${shed ? 'Service overloaded, load shed' : 'Rate limit exceeded'} (${violated.join(', ')}); retry in ${retryAfter} s.`,
    'violated-policies': violated,
    retryAfter,
  }
}

interface SerializedProblem {
  readonly body: ProblemDetails
  /** `body` as JSON, the bytes sent. */
  readonly json: string
}

// The last body per refusing rule: a client far over its limit gets the same body for a whole
// second, so the reject path skips building and serialising it again.
const lastByRule = new WeakMap<Rule, SerializedProblem>()
const byListedDecision = new WeakMap<Decision, SerializedProblem>()

/**
 * {@link problemDetails} plus its JSON, reusing the previous answer when a single rule refused
 * with the same status and `retryAfter` (the body is then identical; it is frozen).
 *
 * @param decision - a decision whose action is `reject`
 * @returns the body and its serialisation
 */
export function serializedProblem(decision: Decision): SerializedProblem {
  if (decision.reason !== undefined) {
    // Deny-list and unmatched refusals are one frozen decision per limiter: one body each.
    let known = byListedDecision.get(decision)
    if (known === undefined) {
      const body = Object.freeze(problemDetails(decision))
      known = { body, json: JSON.stringify(body) }
      byListedDecision.set(decision, known)
    }
    return known
  }
  let only: Rule | undefined
  let count = 0
  for (const o of decision.outcomes) {
    if (!o.allowed && !o.shadow && o.rule !== only) {
      only = o.rule
      count++
    }
  }
  if (count !== 1 || only === undefined) {
    const body = problemDetails(decision)
    return { body, json: JSON.stringify(body) }
  }
  const last = lastByRule.get(only)
  const retryAfter = retryAfterSeconds(decision.retryAfterMs)
  if (last && last.body.retryAfter === retryAfter && last.body.status === decision.status)
    return last
  const body = Object.freeze(problemDetails(decision))
  const fresh = { body, json: JSON.stringify(body) }
  lastByRule.set(only, fresh)
  return fresh
}
