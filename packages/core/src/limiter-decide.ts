import type { AlgorithmResult } from './algorithms/algorithm.js'
import type { Decision, DecisionAction, DecisionReason, RuleOutcome } from './decision.js'
import type { Entry } from './limiter-entry.js'
import { FloodgateError } from './errors.js'
import { describeValue } from './options/checks.js'

function baseDecision(failedOpen: boolean): Decision {
  return Object.freeze({
    allowed: true,
    action: 'allow',
    status: 200,
    limit: 0,
    remaining: 0,
    resetMs: 0,
    retryAfterMs: 0,
    waitMs: 0,
    rule: undefined,
    outcomes: Object.freeze([]),
    failedOpen,
    decidedAtMs: 0,
  })
}

/** The decision when every matched rule's key skipped the request: allowed, no headers. */
export const NO_RULES: Decision = baseDecision(false)
/** The decision when no rule matches the request: allowed, no outcomes, no headers. */
export const UNMATCHED: Decision = Object.freeze({ ...baseDecision(false), reason: 'unmatched' })
/** The decision for a client on the allow list: allowed, nothing counted, no headers. */
export const ALLOW_LISTED: Decision = Object.freeze({
  ...baseDecision(false),
  reason: 'allow-list',
})

/**
 * A refusal made without counting: a client on the deny list, or a request no rule matched under
 * `unmatched: 'reject'`.
 *
 * @param status - the status to answer
 * @param reason - why
 * @returns the frozen decision
 */
export function listedRefusal(
  status: Decision['status'],
  reason: Exclude<DecisionReason, 'allow-list'>,
): Decision {
  return Object.freeze({
    ...baseDecision(false),
    allowed: false,
    action: 'reject',
    status,
    reason,
  })
}
/** The decision when the store failed: allowed, unjudged. */
export const FAILED_OPEN: Decision = baseDecision(true)

const isCount = (v: unknown): boolean => typeof v === 'number' && v >= 0 && v <= Number.MAX_VALUE

/**
 * Whether a store's answer is one well-formed result per entry: a boolean verdict, finite,
 * non-negative numbers, and a wait no longer than the entry allows (`maxWaitMs`, 0 for a rule
 * that does not queue). Anything else (a broken or hostile store) makes the request fail open
 * instead of reaching the decision, a header or a queue timer.
 *
 * @param entries - the entries the store was asked about
 * @param banChecks - how many ban checks (which never wait) were asked after them
 */
export function validResults(
  results: unknown,
  entries: readonly { readonly maxWaitMs: number }[],
  banChecks = 0,
): results is readonly AlgorithmResult[] {
  const asked = entries.length
  const n = asked + banChecks
  if (!Array.isArray(results) || results.length !== n) return false
  for (let i = 0; i < n; i++) {
    const r: unknown = results[i]
    if (typeof r !== 'object' || r === null) return false
    const a = r as AlgorithmResult
    if (typeof a.allowed !== 'boolean') return false
    if (!isCount(a.limit) || !isCount(a.remaining) || !isCount(a.resetMs)) return false
    if (!isCount(a.retryAfterMs) || !isCount(a.waitMs)) return false
    // A longer wait would hold the request past what its rule allows (and past 2^31 - 1 ms a
    // timer fires at once).
    if (a.waitMs > (i < asked ? entries[i]!.maxWaitMs : 0)) return false
  }
  return true
}

const FIELDS = ['limit', 'remaining', 'resetMs', 'retryAfterMs', 'waitMs'] as const

/**
 * The error for an answer `validResults` refused, naming its first fault (the length, a result
 * that is not an object, a field and its value, a wait past the entry's `maxWaitMs`). Made only
 * when the answer is refused; a field that throws when read is named as such.
 */
export function invalidAnswer(
  results: unknown,
  entries: readonly { readonly maxWaitMs: number }[],
  banChecks = 0,
): FloodgateError {
  const asked = entries.length
  const n = asked + banChecks
  const fail = (why: string): FloodgateError =>
    new FloodgateError('FG_ERR_STORE_ANSWER_INVALID', `store answered ${why}`)
  if (!Array.isArray(results))
    return fail(`${describeValue(results)}, not an array of ${n} results`)
  if (results.length !== n) return fail(`${results.length} results for ${n} entries`)
  for (let i = 0; i < n; i++) {
    try {
      const r: unknown = results[i]
      if (typeof r !== 'object' || r === null) return fail(`${describeValue(r)} as result ${i}`)
      const a = r as Record<string, unknown>
      if (typeof a.allowed !== 'boolean') {
        return fail(`allowed ${describeValue(a.allowed)} in result ${i}, not a boolean`)
      }
      for (const f of FIELDS) {
        if (!isCount(a[f])) {
          return fail(
            `${f} ${describeValue(a[f])} in result ${i}, not a finite number of at least 0`,
          )
        }
      }
      const maxWaitMs = i < asked ? entries[i]!.maxWaitMs : 0
      if ((a.waitMs as number) > maxWaitMs) {
        return fail(
          `waitMs ${a.waitMs as number} in result ${i}, past the entry's maxWaitMs (${maxWaitMs})`,
        )
      }
    } catch {
      return fail(`result ${i} with a field that throws when read`)
    }
  }
  return fail('results that changed while they were read')
}

/**
 * Combine the store's per-rule results into one decision: every enforced rule must admit
 * (all-or-nothing); shadow rules are reported but never refuse. Counts each rule's outcome.
 * `nowMs` is the limiter's clock reading the store was asked with: the decision's
 * `decidedAtMs`, which its durations count from.
 */
export function judge(
  entries: readonly Entry[],
  results: readonly AlgorithmResult[],
  banned: readonly boolean[] | undefined,
  nowMs: number,
): Decision {
  // A banned rule's outcome carries the ban: the general path marks it.
  if (entries.length === 1 && banned?.[0] !== true) {
    return judgeOne(entries[0]!, results[0]!, nowMs)
  }
  return judgeMany(entries, results, banned, nowMs)
}

// Apart from judge() so that the one-rule path, the common one, stays small enough to inline
// and does not pay for the many-rule path's closure context on every call.
function judgeMany(
  entries: readonly Entry[],
  results: readonly AlgorithmResult[],
  banned: readonly boolean[] | undefined,
  nowMs: number,
): Decision {
  const n = entries.length
  const outcomes: RuleOutcome[] = new Array<RuleOutcome>(n)
  let gate = true
  let drop = false
  let waitMs = 0
  let refusing = -1
  let tightest = -1
  for (let i = 0; i < n; i++) {
    const r = results[i]!
    const e = entries[i]!
    // Copy now: a synchronous store reuses its result objects on the next call.
    outcomes[i] = {
      rule: e.rule.rule,
      key: e.key,
      allowed: r.allowed,
      limit: r.limit,
      remaining: r.remaining,
      resetMs: r.resetMs,
      retryAfterMs: r.retryAfterMs,
      waitMs: r.waitMs,
      shadow: e.shadow,
    }
    if (banned?.[i] === true) outcomes[i] = { ...outcomes[i]!, banned: true }
    if (e.shadow) continue
    if (!r.allowed) {
      gate = false
      if (e.rule.rule.onLimit.action === 'drop') drop = true
      if (refusing < 0 || r.retryAfterMs > outcomes[refusing]!.retryAfterMs) refusing = i
    } else if (r.waitMs > waitMs) {
      waitMs = r.waitMs
    }
    if (tightest < 0 || r.remaining < outcomes[tightest]!.remaining) tightest = i
  }

  let action: DecisionAction
  let status: 200 | 429 | 503 = 200
  let decider = tightest
  if (gate) {
    action = waitMs > 0 ? 'queue' : 'allow'
    if (action === 'queue') decider = outcomes.findIndex((o) => !o.shadow && o.waitMs === waitMs)
  } else {
    decider = refusing
    const over = entries[refusing]!.rule.rule.onLimit
    action = drop ? 'drop' : 'reject'
    status = over.action === 'reject' ? over.status : 429
  }
  if (!gate) {
    // Nothing was charged (all-or-nothing): the rules that would have admitted report what
    // remains before this request, not after it.
    for (let i = 0; i < n; i++) {
      const o = outcomes[i]!
      // A queued rule's reservation was not taken either, but its wait says it had no unit left.
      if (o.shadow || !o.allowed || o.waitMs > 0) continue
      const before = Math.min(o.limit, o.remaining + entries[i]!.cost)
      outcomes[i] = { ...o, remaining: before }
    }
  }
  const main = decider >= 0 ? outcomes[decider]! : undefined
  const decision: Decision = {
    allowed: gate,
    action,
    status,
    limit: main?.limit ?? 0,
    remaining: main?.remaining ?? 0,
    resetMs: main?.resetMs ?? 0,
    retryAfterMs: gate ? 0 : (main?.retryAfterMs ?? 0),
    waitMs,
    rule: main?.rule,
    outcomes,
    failedOpen: false,
    decidedAtMs: nowMs,
  }
  if (!gate && main?.banned === true)
    return countOutcomes(entries, { ...decision, banned: true }, drop)
  return countOutcomes(entries, decision, drop)
}

function countOutcomes(entries: readonly Entry[], decision: Decision, drop: boolean): Decision {
  const n = entries.length
  const gate = decision.allowed
  const outcomes = decision.outcomes

  for (let i = 0; i < n; i++) {
    const c = entries[i]!.rt.counts
    const o = outcomes[i]!
    if (o.shadow) {
      if (!o.allowed) c.shadowRejected++
    } else if (gate) {
      if (o.waitMs > 0) c.queued++
      else c.allowed++
    } else if (!o.allowed) {
      if (drop) c.dropped++
      else c.rejected++
    }
  }
  return decision
}

/**
 * `judge` for a request that one rule decides, the common case: the same decision, reached
 * without the loops and the working array of the general case.
 */
export function judgeOne(e: Entry, r: AlgorithmResult, nowMs: number): Decision {
  const rule = e.rule.rule
  const shadow = e.shadow
  const outcome: RuleOutcome = {
    rule,
    key: e.key,
    allowed: r.allowed,
    limit: r.limit,
    remaining: r.remaining,
    resetMs: r.resetMs,
    retryAfterMs: r.retryAfterMs,
    waitMs: r.waitMs,
    shadow,
  }
  const counts = e.rt.counts
  if (shadow) {
    // A shadow rule never decides: the request passes as if no rule had matched it.
    if (!outcome.allowed) counts.shadowRejected++
    return {
      allowed: true,
      action: 'allow',
      status: 200,
      limit: 0,
      remaining: 0,
      resetMs: 0,
      retryAfterMs: 0,
      waitMs: 0,
      rule: undefined,
      outcomes: [outcome],
      failedOpen: false,
      decidedAtMs: nowMs,
    }
  }
  if (outcome.allowed) {
    const waitMs = outcome.waitMs > 0 ? outcome.waitMs : 0
    if (waitMs > 0) counts.queued++
    else counts.allowed++
    return {
      allowed: true,
      action: waitMs > 0 ? 'queue' : 'allow',
      status: 200,
      limit: outcome.limit,
      remaining: outcome.remaining,
      resetMs: outcome.resetMs,
      retryAfterMs: 0,
      waitMs,
      rule,
      outcomes: [outcome],
      failedOpen: false,
      decidedAtMs: nowMs,
    }
  }
  const over = rule.onLimit
  const drop = over.action === 'drop'
  if (drop) counts.dropped++
  else counts.rejected++
  return {
    allowed: false,
    action: drop ? 'drop' : 'reject',
    status: over.action === 'reject' ? over.status : 429,
    limit: outcome.limit,
    remaining: outcome.remaining,
    resetMs: outcome.resetMs,
    retryAfterMs: outcome.retryAfterMs,
    waitMs: 0,
    rule,
    outcomes: [outcome],
    failedOpen: false,
    decidedAtMs: nowMs,
  }
}

/**
 * The refusal of a queued request that will not be served though its client is still there
 * (the limiter closed while it waited): what a full queue answers, a 429 whose `retryAfterMs`
 * is the wait it had, since its reservation was given back and its turn will come again then.
 *
 * @param queued - the queued decision
 * @returns the refusal, with each waiting outcome refused the same way
 */
export function queueRefusal(queued: Decision): Decision {
  const retryAfterMs = Math.max(1, queued.waitMs)
  const outcomes = queued.outcomes.map((o) =>
    o.waitMs > 0 ? { ...o, allowed: false, waitMs: 0, retryAfterMs: Math.max(1, o.waitMs) } : o,
  )
  return {
    ...queued,
    allowed: false,
    action: 'reject',
    status: 429,
    waitMs: 0,
    retryAfterMs,
    outcomes,
  }
}
