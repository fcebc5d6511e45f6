import type { Clock } from './clock.js'
import type { AlgorithmResult } from './algorithms/algorithm.js'
import { keyFromParts, type ClientKey } from './keys/build-key.js'
import type { RuleRuntime } from './limiter-rules.js'
import { storeName } from './limiter-rules.js'
import { describeValue, misuseError, optionError } from './options/checks.js'
import type { Rule } from './rules/rule.js'
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

/** One rule's view of one client, as `limiter.get` reads it (nothing is charged). */
export interface ClientState {
  readonly rule: Rule
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
}

/** What the client-state operations need from the limiter. */
export interface ClientStateContext {
  readonly store: Store
  readonly ipv6Subnet: number
  readonly clock: Clock
  readonly runtimes: () => RuleRuntime[]
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
    return [{ rt, key: keyFor(ctx, op, rt, key) }]
  }
  checkClientKey(op, key)
  const out: Target[] = []
  for (const rt of ctx.runtimes()) {
    const stored = keyFromParts(rt.compiled.rule, key, ctx.ipv6Subnet)
    if (stored !== undefined) out.push({ rt, key: stored })
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

/** `limiter.get`: each rule's view of the client, read without charging. */
export async function getState(
  ctx: ClientStateContext,
  key: unknown,
  options?: ClientRuleOptions,
): Promise<ClientState[]> {
  const targets = targetsOf(ctx, 'get', key, options)
  const peek = need(ctx.store, 'peek', 'get')
  const asked: StateEntry[] = targets.map((t) => ({ rule: t.rt.compiled, key: t.key }))
  const blocks: number[] = []
  targets.forEach((t, i) => {
    const ban = t.rt.compiled.ban
    if (ban) {
      blocks[i] = asked.length
      asked.push({ rule: ban.block, key: t.key })
    }
  })
  const answer: readonly AlgorithmResult[] = await peek(asked, ctx.clock())
  return targets.map((t, i) => {
    const r = answer[i]!
    const b = blocks[i] === undefined ? undefined : answer[blocks[i]]
    const bannedForMs = b && !b.allowed ? b.retryAfterMs : 0
    return {
      rule: t.rt.compiled.rule,
      key: t.key,
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
  const entries: StateEntry[] = []
  for (const t of targets) {
    entries.push({ rule: t.rt.compiled, key: t.key })
    const ban = t.rt.compiled.ban
    if (ban) entries.push({ rule: ban.refusals, key: t.key }, { rule: ban.block, key: t.key })
  }
  await reset(entries, ctx.clock())
}

/** `limiter.penalty`: charge units past the limit (into debt) on rules that carry debt. */
export async function penalize(
  ctx: ClientStateContext,
  key: unknown,
  units: unknown,
  options?: ClientRuleOptions,
): Promise<void> {
  const cost = checkUnits('penalty', units)
  const targets = targetsOf(ctx, 'penalty', key, options)
  const cannot = targets.filter((t) => !t.rt.compiled.algorithm.charge)
  if (cannot.length > 0) {
    const rule = cannot[0]!.rt.compiled.rule
    throw misuseError(
      `penalty: rule ${JSON.stringify(rule.id)} (${rule.algorithm}) cannot be charged past its limit; only token-bucket and gcra rules carry debt${options?.rule === undefined ? ' (name one with { rule })' : ''}`,
    )
  }
  const charge = need(ctx.store, 'penalize', 'penalty')
  const entries: RefundEntry[] = targets.map((t) => ({ rule: t.rt.compiled, key: t.key, cost }))
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
  const entries: RefundEntry[] = targets.map((t) => ({ rule: t.rt.compiled, key: t.key, cost }))
  if (entries.length > 0) await ctx.store.refund(entries, ctx.clock())
}
