import type { RuleAdaptive } from '../rules/rule.js'

/** What one closed window measured. */
export interface WindowStats {
  /** Responses that completed in the window. */
  readonly samples: number
  /** The rule's latency percentile over those responses, in milliseconds (any value when `samples` is 0). */
  readonly percentileMs: number
  /** The most requests in flight at once during the window. */
  readonly peakInFlight: number
  /** Requests in flight when the window closed. */
  readonly inFlight: number
  /**
   * True when the window was carried on as long as allowed to gather `minSamples` responses:
   * the responses it has then count, however few.
   */
  readonly overdue?: boolean | undefined
}

/** The controller's state between windows. */
export interface ControlState {
  /** The limit on requests in flight; fractional, so small moves add up. */
  readonly limit: number
  /** The latency percentile without load, learnt from the windows; 0 until the first one. */
  readonly baselineMs: number
}

/** How much of a baseline's distance to a lightly loaded window's percentile it closes. */
const BASELINE_LEARNING = 0.2

/**
 * The limit for the next window: the control law of adaptive rules (docs/adaptive.md).
 *
 * The percentile measured is compared with a reference: the target, or without one
 * `tolerance` times the baseline. Their ratio (reference / measured, the gradient) scales the
 * limit: under the reference it rises, over it it falls, in proportion, so a service whose
 * latency grows with the requests it holds is brought to the limit where the percentile meets
 * the reference in one move. The move is bounded (`maxDecrease`, `maxIncrease`), smoothed
 * (`smoothing`), never rises past twice the peak actually used unless the traffic filled it (a
 * limit nobody reaches says nothing about the service), and the result is kept within `minLimit` and `maxLimit`.
 *
 * A window with fewer than `minSamples` responses moves nothing (the limiter carries it on, up
 * to a bound, until it has them: `overdue`), unless nothing completed at all while the limit
 * was full: a service that answers nothing within a window is the
 * slowest there is, and the limit falls by `maxDecrease`.
 *
 * The baseline follows the lowest percentile seen; when the window was lightly loaded (its
 * peak at most half the limit, so the latency is the service's own and not the queue's) it
 * also moves a fifth of the way to the window's percentile, upwards too, so a service that
 * became slower for good is learnt again. At the lowest limit, with the percentile still over
 * the reference, the same holds: nothing less loaded can be measured.
 *
 * Pure: the same inputs give the same limit.
 *
 * @param state - the limit and baseline in force
 * @param stats - what the window that just closed measured
 * @param s - the rule's settings
 * @returns the state for the next window
 */
export function nextControlState(
  state: ControlState,
  stats: WindowStats,
  s: RuleAdaptive,
): ControlState {
  const { limit } = state
  let { baselineMs } = state
  if (stats.samples === 0 || (stats.samples < s.minSamples && stats.overdue !== true)) {
    const stalled = stats.samples === 0 && stats.inFlight >= Math.floor(limit)
    if (!stalled) return state
    return { limit: clamp(limit * (1 - s.maxDecrease), s.minLimit, s.maxLimit), baselineMs }
  }
  const p = Math.max(stats.percentileMs, 1e-3)
  const lightlyLoaded = stats.peakInFlight <= limit / 2
  if (baselineMs <= 0 || p < baselineMs) baselineMs = p
  else if (lightlyLoaded || (Math.floor(limit) <= s.minLimit && p > baselineMs * s.tolerance)) {
    baselineMs += (p - baselineMs) * BASELINE_LEARNING
  }
  const reference = s.targetMs ?? baselineMs * s.tolerance
  const gradient = clamp(reference / p, 1 - s.maxDecrease, 1 + s.maxIncrease)
  let wanted = limit * gradient
  // Rising only as far as the traffic reached: an unused limit must not climb to maxLimit
  // and then take many windows to come down when the load arrives. A limit the traffic
  // filled may rise by the whole step.
  const filled = stats.peakInFlight >= Math.floor(limit)
  if (wanted > limit && !filled) wanted = Math.min(wanted, Math.max(limit, 2 * stats.peakInFlight))
  const next = limit + (wanted - limit) * s.smoothing
  return { limit: clamp(next, s.minLimit, s.maxLimit), baselineMs }
}

function clamp(x: number, lo: number, hi: number): number {
  return x < lo ? lo : x > hi ? hi : x
}
