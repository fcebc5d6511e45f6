import { durationMs } from './duration.js'
import { describeValue } from './options/checks.js'
import {
  compileKeyPart,
  type KeyBuilderFailed,
  type KeyBuilders,
  type KeyFn,
} from './keys/build-key.js'
import type { RequestFacts } from './request-facts.js'
import { BUCKET_ALGORITHMS, bucketOutOfRange, limitTooLarge } from './rules/algorithm-catalog.js'
import { stateIdOf } from './rules/compile-rules.js'
import type { CompiledRule } from './rules/compiled-rules.js'
import type { KeyPart, RuleTier } from './rules/rule.js'
import { MAX_DURATION_MS } from './rules/schema-fields.js'

/**
 * What a limit function answers for one request: a limit (the rule's window applies), a limit
 * with its own window (a duration such as `'1m'` or milliseconds) and burst, or `undefined`
 * for the rule's own limit.
 */
export type LimitAnswer =
  | number
  | {
      readonly limit: number
      readonly window?: string | number | undefined
      readonly burst?: number | undefined
    }
  | undefined

/**
 * Chooses a rule's limit per request, in code: from the user's plan, a tenant's contract.
 * Synchronous, or a promise (the limiter waits for it at most `decisionTimeoutMs`). An answer
 * that is not a limit, a throw, a rejection or a timeout applies the rule's own limit and logs
 * `FG_WRN_LIMIT_INVALID`.
 */
export type LimitFunction<Req = unknown> = (
  req: Req,
  facts: RequestFacts<Req>,
) => LimitAnswer | Promise<LimitAnswer>

/** Limit functions by the id of the rule whose limit they choose. */
export type LimitFunctions<Req = unknown> = Readonly<Record<string, LimitFunction<Req> | undefined>>

/** Most distinct limits one rule's function may answer; each is a state of its own. */
export const MAX_LIMIT_VARIANTS = 64

/** Why an answer was not used, for the warning. */
export type LimitProblem = (reason: string, fields: Record<string, unknown>) => void

/**
 * The rule with another limit: the same id, algorithm, key, actions and ban, its own params
 * and its own state. A tier's name is part of the state id, so two tiers never share a state.
 * The ban's states are the rule's: a client's refusals and ban do not depend on its plan.
 */
export function variantOf(base: CompiledRule, limits: RuleTier, tier?: string): CompiledRule {
  const rule = Object.freeze({ ...base.rule, ...limits })
  const params = Object.freeze({
    limit: limits.limit,
    windowMs: limits.windowMs,
    burst: limits.burst,
  })
  const stateId = tier === undefined ? stateIdOf(rule) : `${stateIdOf(rule)}|tier:${tier}`
  const ban = base.ban
  return Object.freeze({
    rule,
    algorithm: base.algorithm,
    params,
    stateId,
    ...(ban === undefined ? {} : { ban }),
  })
}

/** A state a client may be counted under by one rule: the rule's own, a tier's, an answer's. */
export interface LimitState {
  readonly compiled: CompiledRule
  /** The tier's name, for a tier's state. */
  readonly tier?: string | undefined
}

/** A rule's tiers, for the operations on one client (`limiter.get`, `reset`, …). */
export interface TierLookup {
  /** The key part whose value names the tier. */
  readonly by: KeyPart
  /** Every state a client of the rule may be counted under: each tier, and the rule's own. */
  readonly states: readonly LimitState[]
  /** The state a request whose `by` part has this value is counted under. */
  stateOf(value: string | undefined): LimitState
}

/** Picks the compiled rule (its limit and its state) one request is counted against. */
export type LimitPick = (facts: RequestFacts) => CompiledRule | Promise<CompiledRule>

/**
 * A rule's tiers compiled: a lookup of the `by` part's value. A `by` builder that fails gives
 * no value (the default tier), and `failed` is told.
 */
export function tierPick<Req>(
  base: CompiledRule,
  builders: KeyBuilders<Req>,
  ipv6Subnet: number,
  path: string,
  failed?: KeyBuilderFailed,
): { pick: LimitPick; stateIds: string[]; lookup: TierLookup } | undefined {
  const tiers = base.rule.tiers
  if (!tiers) return undefined
  const read: KeyFn = compileKeyPart(tiers.by, builders, ipv6Subnet, `${path}.tiers.by`, failed)
  const byName = new Map<string, CompiledRule>()
  const states: LimitState[] = []
  for (const name of Object.keys(tiers.values)) {
    const compiled = variantOf(base, tiers.values[name]!, name)
    byName.set(name, compiled)
    states.push(Object.freeze({ compiled, tier: name }))
  }
  const fallback: LimitState =
    tiers.default === undefined
      ? Object.freeze({ compiled: base })
      : states.find((s) => s.tier === tiers.default)!
  if (tiers.default === undefined) states.push(fallback)
  return {
    pick: (facts) => {
      const name = read(facts)
      return (name !== undefined && byName.get(name)) || fallback.compiled
    },
    stateIds: [...byName.values()].map((c) => c.stateId),
    lookup: Object.freeze({
      by: tiers.by,
      states: Object.freeze(states),
      stateOf: (value: string | undefined) =>
        (value !== undefined && states.find((s) => s.tier === value)) || fallback,
    }),
  }
}

/** The limits a limit function answered, checked; undefined when the answer is not a limit. */
function readAnswer(base: CompiledRule, answer: unknown): RuleTier | undefined | 'base' {
  if (answer === undefined) return 'base'
  const rule = base.rule
  const concurrency = rule.algorithm === 'concurrency'
  let limit: unknown
  let windowMs: number | undefined = rule.windowMs
  let burst: unknown
  if (typeof answer === 'number') limit = answer
  else if (typeof answer === 'object' && answer !== null) {
    const a = answer as { limit?: unknown; window?: unknown; burst?: unknown }
    limit = a.limit
    burst = a.burst
    if (a.window !== undefined) {
      if (concurrency) return undefined
      windowMs = durationMs(a.window)
    }
  } else return undefined
  if (typeof limit !== 'number' || !Number.isSafeInteger(limit) || limit <= 0) return undefined
  // A limit the rule could not be written with (a sliding-window-log of a million units would
  // allocate a timestamp per unit, per client) is not one a function may answer either.
  if (limitTooLarge(rule.algorithm, limit)) return undefined
  if (windowMs === undefined || (!concurrency && (windowMs <= 0 || windowMs > MAX_DURATION_MS)))
    return undefined
  const bucket = BUCKET_ALGORITHMS.has(rule.algorithm)
  if (burst !== undefined) {
    if (!bucket || typeof burst !== 'number' || !Number.isSafeInteger(burst) || burst <= 0)
      return undefined
  }
  const capacity = bucket ? (burst ?? limit) : limit
  // A capacity below the rule's cost could never admit a request.
  if (capacity < rule.cost) return undefined
  const queueMs = rule.onLimit.action === 'queue' ? rule.onLimit.maxWaitMs : 0
  if (bucketOutOfRange(rule.algorithm, limit, windowMs, capacity, queueMs)) return undefined
  return { limit, windowMs, burst: capacity }
}

/**
 * A limit read back from a shared store's record (`Store.recordedLimits`), checked as the limit
 * function's answer it was on the host that recorded it: a limit this rule could not have been
 * answered (a limit, window or burst that is not a positive integer in range, a burst where the
 * algorithm has none, a capacity below the cost) is not one. Only `limit`, `windowMs` and
 * `burst` are read: other fields (an `algorithm`, an `id`) never reach the rule.
 *
 * @returns the limits, or a description of what is wrong with them
 */
export function readRecorded(base: CompiledRule, recorded: unknown): RuleTier | string {
  if (typeof recorded !== 'object' || recorded === null || Array.isArray(recorded)) {
    return `${describeValue(recorded)} is not { limit, windowMs, burst }`
  }
  const r = recorded as { limit?: unknown; windowMs?: unknown; burst?: unknown }
  const { limit, windowMs, burst } = r
  const algorithm = base.rule.algorithm
  const answer = {
    limit,
    // A concurrency rule has no window: an answer to it names none.
    window: algorithm === 'concurrency' ? undefined : windowMs,
    burst: BUCKET_ALGORITHMS.has(algorithm) ? burst : undefined,
  }
  const limits =
    typeof windowMs === 'number' && Number.isFinite(windowMs) ? readAnswer(base, answer) : undefined
  // The recorded tier must be the one the answer makes: a concurrency rule's window is its own,
  // a rule without a burst has the limit as its capacity.
  if (
    typeof limits !== 'object' ||
    limits.limit !== limit ||
    limits.windowMs !== windowMs ||
    limits.burst !== burst
  ) {
    return `{ limit: ${describeValue(limit)}, windowMs: ${describeValue(windowMs)}, burst: ${describeValue(burst)} } is not a limit rule ${JSON.stringify(base.rule.id)} (${algorithm}) could have been answered`
  }
  return limits
}

function isThenable(x: unknown): x is PromiseLike<unknown> {
  return typeof x === 'object' && x !== null && typeof (x as { then?: unknown }).then === 'function'
}

/**
 * A rule's limit function compiled: the answer is checked, and each distinct limit gets one
 * variant of the rule (at most {@link MAX_LIMIT_VARIANTS} in `seen`, across rules swaps; past
 * that, the rule's own limit).
 * `seen` collects the limits of the variants made by their state ids, so a rules swap keeps
 * their state and `limiter.reset` finds them; `made` is told of each new one (to record it
 * in a shared store, where the other hosts find it).
 */
export function functionPick<Req>(
  base: CompiledRule,
  fn: LimitFunction<Req>,
  timeoutMs: number,
  seen: Map<string, RuleTier>,
  problem: LimitProblem,
  made?: (limits: RuleTier) => void,
): LimitPick {
  const variants = new Map<string, CompiledRule>()
  const id = base.rule.id
  const use = (answer: unknown): CompiledRule => {
    const limits = readAnswer(base, answer)
    if (limits === 'base') return base
    if (limits === undefined) {
      problem('the limit function answered something that is not a limit', {
        rule: id,
        answer: describeValue(answer),
      })
      return base
    }
    const k = `${limits.limit}|${limits.windowMs}|${limits.burst}`
    let v = variants.get(k)
    if (v === undefined) {
      v = variantOf(base, limits)
      // Counted in `seen`, which outlives this compiled rule: a rules swap that keeps the rule
      // must not allow 64 more (each a state kept in the store and read by get and reset).
      if (!seen.has(v.stateId)) {
        if (seen.size >= MAX_LIMIT_VARIANTS) {
          problem(`the limit function answered more than ${MAX_LIMIT_VARIANTS} distinct limits`, {
            rule: id,
          })
          return base
        }
        seen.set(v.stateId, limits)
        made?.(limits)
      }
      variants.set(k, v)
    }
    return v
  }
  // An answer whose fields throw when read (a getter, a Proxy) is the function's problem too.
  const unreadable = 'the limit function answered something that cannot be read'
  const useReadable = (answer: unknown): CompiledRule => {
    try {
      return use(answer)
    } catch (err) {
      problem(unreadable, { rule: id, err })
      return base
    }
  }
  return (facts) => {
    let answer: unknown
    try {
      answer = fn(facts.request as Req, facts as RequestFacts<Req>)
    } catch (err) {
      problem('the limit function threw', { rule: id, err })
      return base
    }
    let pending: boolean
    try {
      pending = isThenable(answer)
    } catch (err) {
      problem(unreadable, { rule: id, err })
      return base
    }
    if (!pending) return useReadable(answer)
    return new Promise<CompiledRule>((resolve) => {
      const timer = setTimeout(() => {
        problem(`the limit function did not answer within decisionTimeoutMs (${timeoutMs} ms)`, {
          rule: id,
        })
        resolve(base)
      }, timeoutMs)
      Promise.resolve(answer).then(
        (a) => {
          clearTimeout(timer)
          resolve(useReadable(a))
        },
        (err: unknown) => {
          clearTimeout(timer)
          problem('the limit function rejected', { rule: id, err })
          resolve(base)
        },
      )
    })
  }
}
