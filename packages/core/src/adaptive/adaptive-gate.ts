import type { AlgorithmResult } from '../algorithms/algorithm.js'
import type { RuleAdaptive } from '../rules/rule.js'
import type { AdaptiveState } from './adaptive-state.js'
import { nextControlState, type ControlState } from './control-law.js'
import { GateSlots } from './gate-slots.js'
import type { QuantileSketch } from './latency-sketch.js'

/** The shortest `Retry-After` a shed request is told: a slot frees when a response ends. */
const MIN_RETRY_AFTER_MS = 1000
/**
 * A window with too few responses to tell a percentile is carried into the next one, so a
 * low limit (few responses) still moves; past this many windows its samples are too old.
 */
const MAX_CARRIED_WINDOWS = 8

/**
 * The gate of one adaptive rule on this host: the requests it holds in flight (in total and per
 * client key), the latencies of the window under way, and the limit the control law set at the
 * end of the last one. Every method takes the time as an argument (a reading of the limiter's
 * clock, which may step back or forward); nothing here reads a clock.
 */
export class AdaptiveGate {
  private control: ControlState
  /** The whole limit in force: `control.limit` rounded down, at least 1. */
  private cap: number
  /** Slots only clients within their fair share may take. */
  private reserved: number
  /**
   * Windows are timed on the gate's own steady time, not on the clock's readings: the clock
   * may be the wall clock, which an NTP correction or a restored VM steps back or forward.
   * Steady time advances by the time between two readings, by none when the clock went back,
   * and by at most one window when it leapt forward (the gate cannot tell a leap from a pause,
   * and a pause longer than a window measured nothing either).
   */
  private steadyMs = 0
  /** The last reading of the clock; NaN before the first event. */
  private lastReadingMs = Number.NaN
  /**
   * The first reading after the clock last jumped (back, or forward by more than a window): a
   * response that started before it spans the jump, and its latency is not the service's.
   */
  private jumpedAtMs = Number.NEGATIVE_INFINITY
  /** The clock leapt forward during the window under way: how long it really lasted is unknown. */
  private leapt = false
  /** When the window under way ends, in steady time; NaN before the first event. */
  private windowEndMs = Number.NaN
  private sketch: QuantileSketch
  private peak = 0
  private lastPercentileMs: number | undefined
  private lastSamples = 0
  private carried = 0
  private windowsClosed = 0
  private shedOverShare = 0
  private shedBackground = 0

  /** The requests the host runs under this gate (taken over from the gate it replaces). */
  readonly slots: GateSlots
  /** The gate this one replaces, until the rule set that brings it is in force. */
  predecessor: AdaptiveGate | undefined
  /**
   * The gate that replaced this one in force (its rule's settings changed): the requests
   * matched before are decided, and measured, by the limit in force.
   */
  successor: AdaptiveGate | undefined

  /**
   * @param predecessor - the gate in force for the same rule (or gate name) with other
   *   settings: this one takes over its slots, not its limit
   */
  constructor(
    readonly ruleId: string,
    readonly settings: RuleAdaptive,
    private readonly newSketch: () => QuantileSketch,
    predecessor?: AdaptiveGate,
  ) {
    this.slots = predecessor?.slots ?? new GateSlots(settings.gate !== undefined)
    this.predecessor = predecessor
    this.control = { limit: settings.initialLimit, baselineMs: 0 }
    this.cap = settings.initialLimit
    this.reserved = Math.floor(this.cap * settings.reserve)
    this.sketch = newSketch()
  }

  /** Requests (cost units) in flight. */
  get inFlight(): number {
    return this.slots.inFlight
  }

  /**
   * Decide one request of `cost` slots for client `key` at `nowMs`, into `out`; with `commit`,
   * an admitted request takes its slots. Admitted: while the requests in flight stay within
   * the limit less the reserve, anyone; within the reserve, only a client whose slots stay
   * within its fair share: the limit over the clients holding slots plus one, the one the
   * reserve is kept for (a newcomer, or the client asking when it holds nothing yet). A
   * `background` request never takes the reserve.
   */
  decide(
    key: string,
    cost: number,
    nowMs: number,
    commit: boolean,
    out: AlgorithmResult,
    ruleId: string,
    background = false,
  ): void {
    this.roll(nowMs)
    const cap = this.cap
    const slots = this.slots
    const after = slots.inFlight + cost
    let ok = after <= cap
    if (ok && after > cap - this.reserved) {
      if (background) {
        // Background traffic never takes the reserve: it is shed first.
        ok = false
        this.shedBackground++
      } else {
        ok = slots.of(key) + cost <= cap / (slots.holders + 1)
        if (!ok) this.shedOverShare++
      }
    }
    out.limit = cap
    out.waitMs = 0
    out.resetMs = 0
    if (ok) {
      out.allowed = true
      out.retryAfterMs = 0
      out.remaining = cap - after
      if (commit) this.take(key, cost, ruleId)
    } else {
      out.allowed = false
      out.retryAfterMs = this.retryAfterMs()
      out.remaining = Math.max(0, cap - slots.inFlight)
    }
  }

  /** What a request of cost 0 would be told: the limit and the slots free. */
  peek(nowMs: number, out: AlgorithmResult): void {
    this.roll(nowMs)
    out.allowed = true
    out.waitMs = 0
    out.resetMs = 0
    out.retryAfterMs = 0
    out.limit = this.cap
    out.remaining = Math.max(0, this.cap - this.slots.inFlight)
  }

  /** Take `cost` slots for `key` under rule `ruleId` (a request admitted). */
  take(key: string, cost: number, ruleId: string): void {
    this.slots.take(key, cost, ruleId)
    if (this.slots.inFlight > this.peak) this.peak = this.slots.inFlight
  }

  /** Give back `cost` slots of `key` (its request ended, or was not admitted after all). */
  release(key: string, cost: number, ruleId: string): void {
    this.slots.release(key, cost, ruleId)
  }

  /**
   * Record the latency of a response that ended at `nowMs`. A latency the clock made up is
   * left out: below 0 (the clock went back while the request ran), or of a request that
   * started before the clock last jumped.
   */
  record(latencyMs: number, nowMs: number): void {
    this.roll(nowMs)
    if (!(latencyMs >= 0) || nowMs - latencyMs < this.jumpedAtMs) return
    this.sketch.accept(latencyMs)
  }

  /** Steady time at the clock reading `nowMs` (see `steadyMs`). */
  private steadyAt(nowMs: number): number {
    const elapsed = nowMs - this.lastReadingMs
    // The common case, on every decision: the clock moved on by less than a window.
    if (elapsed >= 0 && elapsed <= this.settings.windowMs) {
      this.lastReadingMs = nowMs
      return (this.steadyMs += elapsed)
    }
    return this.jumped(nowMs, elapsed)
  }

  /** The first reading, one that is no number, or a clock that went back or leapt forward. */
  private jumped(nowMs: number, elapsed: number): number {
    // A reading that is no number at all tells no time.
    if (!Number.isFinite(nowMs)) return this.steadyMs
    const first = Number.isNaN(this.lastReadingMs)
    this.lastReadingMs = nowMs
    if (first) return this.steadyMs
    this.jumpedAtMs = nowMs
    if (elapsed > 0) {
      // Always past the end of the window under way: the roll reading this clears the flag.
      this.steadyMs += this.settings.windowMs
      this.leapt = true
    }
    return this.steadyMs
  }

  /**
   * Close the window under way if it ended by the reading `nowMs`, and move the limit. Steady
   * time moves at most a window per reading, so one reading closes at most one window: the
   * limit moves at most one step at a time, whatever the clock did.
   */
  private roll(nowMs: number): void {
    const t = this.steadyAt(nowMs)
    if (!(t >= this.windowEndMs)) {
      // The first event starts the first window.
      if (Number.isNaN(this.windowEndMs)) this.windowEndMs = t + this.settings.windowMs
      return
    }
    const s = this.settings
    const samples = this.sketch.count
    const end = this.windowEndMs + s.windowMs
    // Nothing completed while the limit was full, for a whole window: unless the clock leapt
    // during it, when the window may have lasted a moment.
    const stalled = samples === 0 && this.slots.inFlight >= this.cap && !this.leapt
    this.leapt = false
    if (samples < s.minSamples && !stalled && this.carried < MAX_CARRIED_WINDOWS) {
      // Too few responses yet: the window goes on, its samples and peak kept.
      this.carried++
      this.windowEndMs = end
      return
    }
    const percentileMs = samples > 0 ? this.sketch.getValueAtQuantile(s.percentile / 100) : 0
    this.closeWindow(samples, percentileMs, this.peak, this.carried >= MAX_CARRIED_WINDOWS)
    this.lastSamples = samples
    if (samples > 0) this.lastPercentileMs = percentileMs
    this.sketch = this.newSketch()
    this.peak = this.slots.inFlight
    this.carried = 0
    this.windowEndMs = end
  }

  private closeWindow(samples: number, percentileMs: number, peak: number, overdue = false): void {
    this.control = nextControlState(
      this.control,
      { samples, percentileMs, peakInFlight: peak, inFlight: this.slots.inFlight, overdue },
      this.settings,
    )
    this.cap = Math.max(1, Math.floor(this.control.limit + 1e-9))
    this.reserved = Math.floor(this.cap * this.settings.reserve)
    this.windowsClosed++
  }

  private retryAfterMs(): number {
    const p = this.lastPercentileMs ?? 0
    return p > MIN_RETRY_AFTER_MS ? Math.ceil(p) : MIN_RETRY_AFTER_MS
  }

  /** The live state, for `limiter.adaptive(ruleId)`, metrics and the demo. */
  state(nowMs: number): AdaptiveState {
    this.roll(nowMs)
    const s = this.settings
    const baselineMs = this.control.baselineMs > 0 ? this.control.baselineMs : undefined
    return {
      ruleId: this.ruleId,
      limit: this.cap,
      inFlight: this.slots.inFlight,
      clients: this.slots.holders,
      percentile: s.percentile,
      percentileMs: this.lastPercentileMs,
      baselineMs,
      targetMs: s.targetMs,
      referenceMs: s.targetMs ?? (baselineMs === undefined ? undefined : baselineMs * s.tolerance),
      samples: this.lastSamples,
      windows: this.windowsClosed,
      shedOverShare: this.shedOverShare,
      shedBackground: this.shedBackground,
      minLimit: s.minLimit,
      maxLimit: s.maxLimit,
      windowMs: s.windowMs,
    }
  }
}
