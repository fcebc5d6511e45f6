import type { Clock } from './clock.js'
import { keyFromParts, partFromKey, type ClientKey } from './keys/build-key.js'
import { invalidAnswer, validResults } from './limiter-decide.js'
import { chargeOf } from './limiter-entry.js'
import {
  MAX_LIMIT_VARIANTS,
  readRecorded,
  variantOf,
  type LimitProblem,
  type LimitState,
} from './limiter-limits.js'
import type { RuleRuntime } from './limiter-rules.js'
import { storeName } from './limiter-rules.js'
import { describeValue, misuseError, optionError } from './options/checks.js'
import type { CompiledRule } from './rules/compiled-rules.js'
import type { Rule, RuleTier } from './rules/rule.js'
import type { RefundEntry, StateEntry, Store } from './stores/store.js'

export type { ClientKey } from './keys/build-key.js'

/** Which rule a call about one client is for. */
export interface ClientRuleOptions {
  /** The rule's id; absent: every rule in force that the key can key. */
  readonly rule?: string | undefined
}

/** Options of `limiter.limit`. */
export interface LimitOptions {
  /** The id of the rule that decides (a global rule or a route rule). */
  readonly rule: string
  /**
   * Units this event costs, multiplied by the rule's own `cost`.
   * @default 1
   */
  readonly cost?: number | undefined
}

/**
 * One rule's view of one client, as `limiter.get` reads it (nothing is charged). A rule whose
 * limit is chosen per request (tiers, a limit function) has one view per limit the client may
 * be counted under: `rule` carries that limit, `tier` names the tier.
 */
export interface ClientState {
  /** The rule, with the limit (and window) of this state. */
  readonly rule: Rule
  /** The tier this state belongs to, for a rule with tiers; undefined for the rule's own limit. */
  readonly tier?: string | undefined
  /** The stored client key (bounded; it may hold a raw header value: do not log it). */
  readonly key: string
  readonly limit: number
  /** Units the client may still spend now. 0 while it is banned. */
  readonly remaining: number
  /** Milliseconds until the client's state is back to fresh. */
  readonly resetMs: number
  /** Milliseconds left in the client's ban under this rule; 0 when it is not banned. */
  readonly bannedForMs: number
}

/** A rule and the stored key a client has under it. */
export interface Target {
  readonly rt: RuleRuntime
  readonly key: string
  /** What the caller gave for the client (a tier may be named by one of its parts). */
  readonly given: ClientKey
}

/** A state of one client under one rule: the rule's own, a tier's, a limit function's answer. */
interface StateTarget extends LimitState {
  readonly target: Target
}

/**
 * The states a client may be counted under by each target rule. `'next'`: those the next
 * request may use: the one tier the client's `by` part names when it is given, else every
 * tier; every limit the rule's limit function answered (here or, with a store that records
 * them, on any host) and the rule's own. `'all'`: every state, whatever the parts say.
 */
async function statesOf(
  ctx: ClientStateContext,
  targets: readonly Target[],
  which: 'next' | 'all',
): Promise<StateTarget[]> {
  const out: StateTarget[] = []
  for (const target of targets) {
    const rt = target.rt
    if (rt.tiers) {
      const named = which === 'next' ? partFromKey(target.given, rt.tiers.by) : undefined
      const states = named === undefined ? rt.tiers.states : [rt.tiers.stateOf(named)]
      for (const s of states) out.push({ ...s, target })
    } else if (rt.answered) {
      const base = rt.compiled
      out.push({ compiled: base, target })
      const limits = [...rt.answered.values(), ...(await recordedOf(ctx, base))]
      const seen = new Set([base.stateId])
      for (const l of limits) {
        const compiled = variantOf(base, l)
        if (seen.has(compiled.stateId)) continue
        seen.add(compiled.stateId)
        out.push({ compiled, target })
      }
    } else out.push({ compiled: rt.compiled, target })
  }
  return out
}

/** What the client-state operations need from the limiter. */
export interface ClientStateContext {
  readonly store: Store
  readonly ipv6Subnet: number
  readonly clock: Clock
  readonly runtimes: () => RuleRuntime[]
  /** Hears of a store's record of limit function answers that was not read (throttled). */
  readonly recordedInvalid?: LimitProblem | undefined
}

/** Most entries of a store's record of one rule's answers read: each is a state to visit. */
export const MAX_RECORDED_LIMITS: number = 4 * MAX_LIMIT_VARIANTS

/**
 * The limits other hosts' limit functions answered for the rule, as the store recorded them.
 * Each is checked as an answer of the rule's function; what fails (a store that throws or
 * rejects, an answer that is not a list, an entry that is not a limit of this rule, entries
 * past {@link MAX_RECORDED_LIMITS}) is left out and named in one line: `get` and `reset` go on
 * with the rule's own state and this host's answers.
 */
async function recordedOf(ctx: ClientStateContext, base: CompiledRule): Promise<RuleTier[]> {
  const store = ctx.store
  if (typeof store.recordedLimits !== 'function') return []
  const problems: string[] = []
  const out: RuleTier[] = []
  try {
    const answer: unknown = await store.recordedLimits(base.stateId)
    if (!Array.isArray(answer))
      problems.push(`the store answered ${describeValue(answer)}, not a list`)
    else {
      const n = Math.min(answer.length, MAX_RECORDED_LIMITS)
      if (answer.length > n) {
        problems.push(`the store answered ${answer.length} limits; only the first ${n} were read`)
      }
      for (let i = 0; i < n; i++) {
        let limits: RuleTier | string
        try {
          limits = readRecorded(base, answer[i])
        } catch (err) {
          // An entry whose fields throw when read (a getter, a Proxy).
          limits = `cannot be read: ${describeError(err)}`
        }
        if (typeof limits === 'string') problems.push(`[${i}]: ${limits}`)
        else out.push(limits)
      }
    }
  } catch (err) {
    problems.push(`the store failed to read them: ${describeError(err)}`)
  }
  if (problems.length > 0) {
    ctx.recordedInvalid?.(
      `${problems.length} problem(s) in the limits recorded for rule ${JSON.stringify(base.rule.id)}, left out: ${problems.slice(0, 3).join('; ')}${problems.length > 3 ? '; …' : ''}`,
      { rule: base.rule.id, problems: problems.length },
    )
  }
  return out
}

function describeError(err: unknown): string {
  try {
    return err instanceof Error ? err.message : describeValue(err)
  } catch {
    return 'an unreadable error'
  }
}

/** @throws OptionsError when `key` is neither a part value nor an object of part values. */
function checkClientKey(op: string, key: unknown): asserts key is ClientKey {
  if (typeof key === 'string' && key.length > 0) return
  if (typeof key === 'number' && Number.isFinite(key)) return
  if (typeof key === 'object' && key !== null && !Array.isArray(key)) {
    for (const [part, v] of Object.entries(key)) {
      if (v !== undefined && typeof v !== 'string' && typeof v !== 'number') {
        throw optionError(`${op}: key.${part}`, 'a string or a number', v)
      }
    }
    return
  }
  throw optionError(
    `${op}: key`,
    "a key part's value (a non-empty string or a number) or an object of part values like { ip: '203.0.113.7' }",
    key,
  )
}

/** The rule with this id among those in force. @throws OptionsError when there is none. */
export function findRule(ctx: ClientStateContext, op: string, id: unknown): RuleRuntime {
  if (typeof id !== 'string') throw optionError(`${op}: rule`, 'a rule id', id)
  const rt = ctx.runtimes().find((r) => r.compiled.rule.id === id)
  if (!rt) throw misuseError(`${op}: no rule with id ${JSON.stringify(id)} is in force`)
  return rt
}

/** The stored key of `key` under one rule. @throws OptionsError when the parts do not key it. */
export function keyFor(ctx: ClientStateContext, op: string, rt: RuleRuntime, key: unknown): string {
  checkClientKey(op, key)
  const rule = rt.compiled.rule
  const stored = keyFromParts(rule, key, ctx.ipv6Subnet)
  if (stored === undefined) {
    throw misuseError(
      `${op}: ${describeValue(key)} does not key rule ${JSON.stringify(rule.id)}, whose key is ${rule.key.join(' + ')}; give ${rule.key.length === 1 ? 'its value or ' : ''}an object like { ${rule.key.map((p) => `'${p}': …`).join(', ')} }`,
    )
  }
  return stored
}

/** The rules (one, or every rule in force) and the client's key under each. */
export function targetsOf(
  ctx: ClientStateContext,
  op: string,
  key: unknown,
  options: ClientRuleOptions | undefined,
): Target[] {
  if (options !== undefined && (typeof options !== 'object' || options === null)) {
    throw optionError(`${op}: options`, 'an object like { rule: id }', options)
  }
  if (options?.rule !== undefined) {
    const rt = findRule(ctx, op, options.rule)
    const stored = keyFor(ctx, op, rt, key)
    return [{ rt, key: stored, given: key as ClientKey }]
  }
  checkClientKey(op, key)
  const out: Target[] = []
  for (const rt of ctx.runtimes()) {
    const stored = keyFromParts(rt.compiled.rule, key, ctx.ipv6Subnet)
    if (stored !== undefined) out.push({ rt, key: stored, given: key })
  }
  if (out.length === 0) {
    throw misuseError(`${op}: no rule in force is keyed by ${describeValue(key)}`)
  }
  return out
}

function need<M extends 'peek' | 'reset' | 'penalize'>(
  store: Store,
  method: M,
  op: string,
): NonNullable<Store[M]> {
  const fn = store[method]
  if (typeof fn !== 'function') {
    throw misuseError(`${op}: ${storeName(store)} cannot ${method}() a client's state`)
  }
  return fn.bind(store) as NonNullable<Store[M]>
}

function checkUnits(op: string, units: unknown): number {
  if (typeof units !== 'number' || !Number.isFinite(units) || units <= 0) {
    throw optionError(`${op}: units`, 'a positive finite number', units)
  }
  return units
}

/**
 * The state `limiter.limit(key)` counts an event under: the tier the key names (its `tiers.by`
 * part), else the one a request without it gets. A limit function reads a request, which an
 * event does not have: its rule counts events under the rule's own limit.
 */
export function eventStateOf(rt: RuleRuntime, key: ClientKey): CompiledRule {
  const tiers = rt.tiers
  return tiers ? tiers.stateOf(partFromKey(key, tiers.by)).compiled : rt.compiled
}

/** No entries of their own: `validResults` then reads every result as one that never waits. */
const NEVER_WAITS: readonly { readonly maxWaitMs: number }[] = []

/** `limiter.get`: each rule's view of the client, read without charging. */
export async function getState(
  ctx: ClientStateContext,
  key: unknown,
  options?: ClientRuleOptions,
): Promise<ClientState[]> {
  const targets = targetsOf(ctx, 'get', key, options)
  const peek = need(ctx.store, 'peek', 'get')
  const states = await statesOf(ctx, targets, 'next')
  const asked: StateEntry[] = states.map((s) => ({ rule: s.compiled, key: s.target.key }))
  // One ban check per rule: its ban does not depend on the limit.
  const blocks = new Map<Target, number>()
  for (const t of targets) {
    const ban = t.rt.compiled.ban
    if (ban) {
      blocks.set(t, asked.length)
      asked.push({ rule: ban.block, key: t.key })
    }
  }
  const answer: unknown = await peek(asked, ctx.clock())
  // A state read waits for nothing: every entry's maxWaitMs is 0.
  if (!validResults(answer, NEVER_WAITS, asked.length)) {
    throw invalidAnswer(answer, NEVER_WAITS, asked.length)
  }
  return states.map((s, i) => {
    const r = answer[i]!
    const at = blocks.get(s.target)
    const b = at === undefined ? undefined : answer[at]
    const bannedForMs = b && !b.allowed ? b.retryAfterMs : 0
    return {
      rule: s.compiled.rule,
      ...(s.tier === undefined ? {} : { tier: s.tier }),
      key: s.target.key,
      limit: r.limit,
      remaining: bannedForMs > 0 ? 0 : r.remaining,
      resetMs: Math.max(r.resetMs, bannedForMs),
      bannedForMs,
    }
  })
}

/** `limiter.reset`: forget the client's state, its counted refusals and its ban. */
export async function resetState(
  ctx: ClientStateContext,
  key: unknown,
  options?: ClientRuleOptions,
): Promise<void> {
  const targets = targetsOf(ctx, 'reset', key, options)
  const reset = need(ctx.store, 'reset', 'reset')
  // A concurrency rule's state is the requests in flight, not history: forgetting it would let
  // as many again start beside them, and their releases would then free the newer ones' slots.
  const counted = targets.filter((t) => !t.rt.holdsSlot)
  const entries: StateEntry[] = (await statesOf(ctx, counted, 'all')).map((s) => ({
    rule: s.compiled,
    key: s.target.key,
  }))
  for (const t of targets) {
    const ban = t.rt.compiled.ban
    if (ban) entries.push({ rule: ban.refusals, key: t.key }, { rule: ban.block, key: t.key })
  }
  await reset(entries, ctx.clock())
}

/**
 * `limiter.penalty`: charge units past the limit (into debt) on rules that carry debt, under
 * every limit the client's next request may be counted under (see `statesOf`).
 */
export async function penalize(
  ctx: ClientStateContext,
  key: unknown,
  units: unknown,
  options?: ClientRuleOptions,
): Promise<void> {
  // Bounded as a request's cost is: a debt of 1e308 units would have the client's next request
  // wait Infinity ms, an answer no store may give, and it would pass unjudged.
  const cost = chargeOf(1, checkUnits('penalty', units))
  const targets = targetsOf(ctx, 'penalty', key, options)
  const cannot = targets.filter((t) => !t.rt.compiled.algorithm.charge)
  if (cannot.length > 0) {
    const rule = cannot[0]!.rt.compiled.rule
    throw misuseError(
      `penalty: rule ${JSON.stringify(rule.id)} (${rule.algorithm}) cannot be charged past its limit; only token-bucket and gcra rules carry debt${options?.rule === undefined ? ' (name one with { rule })' : ''}`,
    )
  }
  const charge = need(ctx.store, 'penalize', 'penalty')
  const entries: RefundEntry[] = (await statesOf(ctx, targets, 'next')).map((s) => ({
    rule: s.compiled,
    key: s.target.key,
    cost,
  }))
  await charge(entries, ctx.clock())
}

/** `limiter.reward`: give units back (never past a fresh state). */
export async function reward(
  ctx: ClientStateContext,
  key: unknown,
  units: unknown,
  options?: ClientRuleOptions,
): Promise<void> {
  const cost = checkUnits('reward', units)
  let targets = targetsOf(ctx, 'reward', key, options)
  const slots = targets.filter((t) => t.rt.holdsSlot)
  if (slots.length > 0 && options?.rule !== undefined) {
    throw misuseError(
      `reward: rule ${JSON.stringify(options.rule)} counts requests in flight (concurrency); they give their slot back with release()`,
    )
  }
  targets = targets.filter((t) => !t.rt.holdsSlot)
  const entries: RefundEntry[] = (await statesOf(ctx, targets, 'next')).map((s) => ({
    rule: s.compiled,
    key: s.target.key,
    cost,
  }))
  if (entries.length > 0) await ctx.store.refund(entries, ctx.clock())
}
