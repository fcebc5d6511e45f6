import type { OptionsError } from '@floodgate/core'
import { refusedOption } from '@floodgate/core/options'
import { algorithms, type CompiledRule } from '@floodgate/core/algorithms'
import { boundedTtlMs } from '../key-ttl.js'

// The numbers a SyncedStore derives from a rule. Only algorithms that carry debt can be
// shared: a sync charges a host what the others admitted, which may leave its bucket below 0.

/** A fleet counter outlives the last host that synced it by this much. */
export const TTL_SLACK_MS = 60_000

/** Milliseconds for one unit to refill. */
export function interval(rule: CompiledRule): number {
  return rule.params.windowMs / rule.params.limit
}

/** Time for a rule's state to refill from empty: how long a key stays shared after its last use here. */
export function idleMs(rule: CompiledRule): number {
  return Math.ceil((rule.params.burst * rule.params.windowMs) / rule.params.limit)
}

/**
 * How long the fleet counter of a rule lives in Redis after the last sync that touched it, as
 * a TTL Redis takes (a refill longer than Redis can hold is capped, see `MAX_TTL_MS`).
 */
export function ttlMs(rule: CompiledRule): number {
  return boundedTtlMs(idleMs(rule) + TTL_SLACK_MS)
}

/**
 * How long a key served here stays remembered (not synced) after its last use: long enough
 * that a burst after a pause is met with this host's share, not a full bucket, and never
 * longer than the fleet counter lives.
 */
export function rememberMs(rule: CompiledRule, syncMs: number): number {
  return Math.min(ttlMs(rule), Math.max(10 * idleMs(rule), 20 * syncMs))
}

/** Whether a rule's algorithm can carry the debt a sync charges (token bucket, GCRA). */
export function isShareable(rule: CompiledRule): boolean {
  return rule.algorithm.charge !== undefined
}

/** The error for a rule whose algorithm a SyncedStore cannot share. */
export function unsupported(ruleId: string, algorithmName: string): OptionsError {
  return refusedOption(
    'SyncedStore',
    `rule ${ruleId} uses ${algorithmName}, which cannot carry the debt a sync charges; use token-bucket or gcra, or a RedisStore for this rule`,
  )
}

/**
 * Refuse the first rule state, by its `stateId`, whose algorithm cannot be shared.
 *
 * @param stateIds - The `stateId`s of the rules in force (`id|algorithm|limit|windowMs|burst`).
 * @throws OptionsError naming the rule and its algorithm.
 */
export function checkShareable(stateIds: Iterable<string>): void {
  for (const id of stateIds) {
    // A stateId is `id|algorithm|limit|windowMs|burst` (core's stateIdOf).
    const [ruleId, name] = id.split('|')
    const algorithm =
      name !== undefined && Object.hasOwn(algorithms, name)
        ? algorithms[name as keyof typeof algorithms]
        : undefined
    if (algorithm && !algorithm.charge) throw unsupported(ruleId ?? id, algorithm.name)
  }
}
