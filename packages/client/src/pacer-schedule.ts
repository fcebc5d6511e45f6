// The arithmetic of a pacer, with no timers: when each reservation may proceed. It follows the
// design of Guava's SmoothRateLimiter. A pacer stores unused permits while idle (up to a
// maximum) and hands out a reservation at `nextFree`, the time the previous reservations are
// paid for; a reservation's own cost moves `nextFree` on, so the cost of a call is paid by
// the caller after it (an idle pacer lets a large call through at once).

/** How a pacer spends and regains stored permits. */
export interface PacerShape {
  /** Milliseconds per permit at the steady rate. */
  readonly intervalMs: number
  /** The most permits stored while idle. */
  readonly maxPermits: number
  /** Stored permits when the pacer is created. */
  readonly initialPermits: number
  /** Milliseconds of idleness that store one permit. */
  readonly coolDownMs: number
  /** Milliseconds that taking `take` of `stored` permits costs (0 for a bursty pacer). */
  storedCostMs(stored: number, take: number): number
}

/** The mutable part: stored permits, and when the next reservation may proceed. */
export interface ScheduleState {
  stored: number
  nextFree: number
}

/**
 * SmoothBursty: permits stored while idle, up to `burst`, are spent at once.
 *
 * @param rate - permits per second
 * @param burst - the most permits stored
 */
export function burstyShape(rate: number, burst: number): PacerShape {
  const intervalMs = 1000 / rate
  return {
    intervalMs,
    maxPermits: burst,
    initialPermits: 0,
    coolDownMs: intervalMs,
    storedCostMs: () => 0,
  }
}

/** How much slower than the steady rate a cold pacer starts. */
export const COLD_FACTOR = 3

/**
 * SmoothWarmingUp: after idleness the stored permits are spent slowly at first. Above a
 * threshold, the time per permit falls linearly from `COLD_FACTOR · interval` (all permits
 * stored, cold) to `interval` (at the threshold); spending the permits above the threshold
 * takes exactly `warmupMs`. Below it, permits cost the steady interval, so a warm pacer has
 * no burst. Idleness refills the store in `warmupMs`, so a pacer idle that long is cold again.
 *
 * @param rate - permits per second at the steady rate
 * @param warmupMs - how long the ramp from `rate / COLD_FACTOR` to `rate` lasts
 */
export function warmingUpShape(rate: number, warmupMs: number): PacerShape {
  const intervalMs = 1000 / rate
  const coldIntervalMs = intervalMs * COLD_FACTOR
  // The area under the interval curve above the threshold is the warm-up period: a trapezoid
  // from `interval` to `coldInterval` over (maxPermits - threshold) permits. Guava puts the
  // threshold at half the warm-up period's worth of permits at the steady rate.
  const threshold = (0.5 * warmupMs) / intervalMs
  const maxPermits = threshold + (2 * warmupMs) / (intervalMs + coldIntervalMs)
  const slope = (coldIntervalMs - intervalMs) / (maxPermits - threshold)
  const intervalAt = (permits: number): number => intervalMs + (permits - threshold) * slope
  return {
    intervalMs,
    maxPermits,
    initialPermits: maxPermits,
    coolDownMs: warmupMs / maxPermits,
    storedCostMs(stored: number, take: number): number {
      let cost = 0
      let left = take
      const above = stored - threshold
      if (above > 0) {
        const fromAbove = Math.min(above, left)
        // The trapezoid between `stored` and `stored - fromAbove` under the linear ramp.
        cost += (fromAbove * (intervalAt(stored) + intervalAt(stored - fromAbove))) / 2
        left -= fromAbove
      }
      return cost + left * intervalMs
    },
  }
}

/** The state of a pacer created at `now`. */
export function initialState(shape: PacerShape, now: number): ScheduleState {
  return { stored: shape.initialPermits, nextFree: now }
}

/** When a reservation made at `now` would proceed, without making it. */
export function earliestGrant(state: ScheduleState, now: number): number {
  return Math.max(state.nextFree, now)
}

/**
 * Makes a reservation of `cost` permits at `now`: updates `state` and returns when the
 * caller may proceed (`now` or later).
 */
export function reserve(
  shape: PacerShape,
  state: ScheduleState,
  now: number,
  cost: number,
): number {
  if (now > state.nextFree) {
    // Idle since nextFree: store the permits that time earned, up to the maximum.
    state.stored = Math.min(
      shape.maxPermits,
      state.stored + (now - state.nextFree) / shape.coolDownMs,
    )
    state.nextFree = now
  }
  const grant = state.nextFree
  const fromStore = Math.min(cost, state.stored)
  const fresh = cost - fromStore
  state.nextFree += shape.storedCostMs(state.stored, fromStore) + fresh * shape.intervalMs
  state.stored -= fromStore
  return grant
}
