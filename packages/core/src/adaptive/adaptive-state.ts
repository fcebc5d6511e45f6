/**
 * The live state of one adaptive rule on this host, from `limiter.adaptive(ruleId)`: for
 * dashboards, metrics exporters and tests. Latencies are in milliseconds, measured from the
 * limiter's decision to the end of the response.
 */
export interface AdaptiveState {
  /** The rule's id; for a gate several rules share (`adaptive.gate`), the gate's name. */
  readonly ruleId: string
  /** The limit on requests (cost units) in flight now. */
  readonly limit: number
  /** Requests (cost units) in flight now. */
  readonly inFlight: number
  /** Client keys with a request in flight. */
  readonly clients: number
  /** The percentile watched (99 for p99). */
  readonly percentile: number
  /** That percentile over the last window with responses; undefined before the first. */
  readonly percentileMs: number | undefined
  /** The latency percentile without load, as learnt so far; undefined before the first window. */
  readonly baselineMs: number | undefined
  /** The rule's target; undefined when it follows the baseline. */
  readonly targetMs: number | undefined
  /** What the percentile is held to: the target, or the baseline times the tolerance. */
  readonly referenceMs: number | undefined
  /** Responses measured in the last window. */
  readonly samples: number
  /** Windows closed so far (each one a move of the limit, or a decision not to move it). */
  readonly windows: number
  /** Requests refused because their client was over its fair share (within the reserve). */
  readonly shedOverShare: number
  /** Requests of `priority: 'background'` rules refused because only the reserve was left. */
  readonly shedBackground: number
  readonly minLimit: number
  readonly maxLimit: number
  readonly windowMs: number
}
