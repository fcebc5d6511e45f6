import type { MemoryStore } from '@floodgate/core'
import { EPSILON } from '@floodgate/core/algorithms'
import { interval } from './rule-maths.js'
import type { FleetLevel } from './sync-exchange.js'
import type { Tracked } from './tracked-keys.js'

// How a host's local bucket follows the fleet bucket: what it learns at a sync, and what it
// holds back between syncs while other hosts share the key.

/** Refunding this much empties any local bucket: the first step of setting its level. */
const RESET = Number.MAX_SAFE_INTEGER

/**
 * The local bucket refills at the rule's rate, but this host is owed only its share of the
 * fleet's refill: charge back the rest of what it refilled since the last adjustment. A debt
 * learned at a sync is the exception: every host holds all of it and pays it back at the full
 * rate, as the fleet bucket does, and only the refill after it is shared (else N hosts would
 * each take the whole refill from then until the next round). And a local bucket that refilled
 * to full while no sync said otherwise holds only its share of a full fleet bucket, so that
 * hosts that all meet a burst after a pause spend one bucket between them, not one each.
 *
 * @param memory - The host's local store.
 * @param t - A key whose fleet level is known and which other hosts share (`share < 1`).
 * @param nowMs - The decision's time.
 * @returns Whether the bucket had refilled to full: the others should learn soon.
 */
export function holdBack(memory: MemoryStore, t: Tracked, nowMs: number): boolean {
  const step = interval(t.rule)
  const refilled = Math.min(nowMs, t.fullAtMs) - t.adjustedMs
  t.adjustedMs = Math.max(t.adjustedMs, nowMs)
  if (nowMs >= t.fullAtMs) {
    const held = t.rule.params.burst * (1 - t.share)
    memory.charge(t.rule, t.key, held, nowMs)
    t.fullAtMs = nowMs + held * step
    return true
  }
  if (refilled > 0) {
    const back = ((1 - t.share) * refilled) / step
    memory.charge(t.rule, t.key, back, nowMs)
    t.fullAtMs += back * step
  }
  return false
}

/**
 * Learn the fleet bucket's level: this host's batches are in it, and the local bucket becomes
 * the fleet's (or, while it has room, this host's share of the room) plus what this host
 * admitted since the call left. With one host sharing the key the local bucket is already
 * exact and is left alone, except at the host's first read of a counter that holds units
 * (hosts gone since left them there): it takes that level too.
 *
 * @param memory - The host's local store.
 * @param t - The key the level was read for.
 * @param level - The script's answer for it.
 * @param nowMs - When the round started.
 * @param current - Whether `t` is still the entry held for its key (a dropped one only learns).
 */
export function adoptFleetLevel(
  memory: MemoryStore,
  t: Tracked,
  level: FleetLevel,
  nowMs: number,
  current: boolean,
): void {
  t.unacked.length = 0
  // A first read finds what hosts gone since left in the fleet bucket (a penalty, an overshoot
  // still owed): this host must hold it even when it is the only one sharing the key now.
  const first = !t.known
  t.known = true
  const burst = t.rule.params.burst
  const hosts = Math.max(1, level.hosts)
  t.room = burst - level.used
  t.share = 1 / hosts
  if (!current) return
  // Alone on a key it has followed since its first read, the local bucket is already exact.
  if (hosts === 1 && !(first && level.used > EPSILON)) return
  // At least one unit of the room, so a trickle spread over the hosts is not refused while
  // the fleet bucket still has room for it.
  const mine = t.room > 0 ? burst - Math.min(t.room, Math.max(t.room * t.share, 1)) : level.used
  const target = mine + t.pending
  memory.refund([{ rule: t.rule, key: t.key, cost: RESET }], nowMs)
  if (target > EPSILON) memory.charge(t.rule, t.key, target, nowMs)
  const step = interval(t.rule)
  t.fullAtMs = nowMs + Math.max(0, target) * step
  // A bucket in debt pays it back at the full rate, as the fleet bucket does (every host holds
  // the same debt); the refill past it is shared like any other.
  t.adjustedMs = nowMs + Math.max(0, target - burst) * step
}

/**
 * When a request this host refused could pass here. The local bucket answers as if it refilled
 * at the rule's rate, which it does only until the debt it learned is paid back; past that it
 * refills at its share of the rate, so the rest of the wait is longer by `1 / share`.
 *
 * @param t - A key whose fleet level is known.
 * @param retryAfterMs - The local bucket's answer.
 * @param nowMs - The decision's time (after {@link holdBack} ran for it).
 * @returns The wait at this host's share of the refill.
 */
export function sharedRetryAfterMs(t: Tracked, retryAfterMs: number, nowMs: number): number {
  const atFullRate = Math.max(0, t.adjustedMs - nowMs)
  if (t.share >= 1 || retryAfterMs <= atFullRate) return retryAfterMs
  return Math.ceil(atFullRate + (retryAfterMs - atFullRate) / t.share)
}

/**
 * The inverse of {@link sharedRetryAfterMs}: how long the local bucket, which answers as if
 * it refilled at the rule's rate, may wait so that the wait at this host's share of the refill
 * is at most `sharedMs`. A queued request's `maxWaitMs` goes to the local bucket through it.
 *
 * @param t - A key whose fleet level is known.
 * @param sharedMs - The longest wait allowed at this host's share.
 * @param nowMs - The decision's time (after {@link holdBack} ran for it).
 * @returns The longest wait the local bucket may answer.
 */
export function localWaitMs(t: Tracked, sharedMs: number, nowMs: number): number {
  const atFullRate = Math.max(0, t.adjustedMs - nowMs)
  if (t.share >= 1 || sharedMs <= atFullRate) return sharedMs
  return Math.floor(atFullRate + (sharedMs - atFullRate) * t.share)
}
