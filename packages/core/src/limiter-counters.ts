/** Decisions counted for one rule (or in total). */
export interface DecisionCounts {
  allowed: number
  rejected: number
  queued: number
  dropped: number
  /** Shadow rules that would have refused. */
  shadowRejected: number
  /** Requests that passed unjudged because the store failed or missed its deadline. */
  failedOpen: number
  /** Refused because the client is on the `deny` list (also counted in `rejected`). */
  denied: number
  /** Passed uncounted because the client is on the `allow` list (also counted in `allowed`). */
  allowListed: number
  /**
   * Requests no rule matched (also counted in `allowed`, or in `rejected` under
   * `unmatched: 'reject'`). Always 0 per rule.
   */
  unmatched: number
}

/** A snapshot of the limiter's counters, for a metrics exporter. */
export interface CountersSnapshot {
  readonly total: Readonly<DecisionCounts>
  /**
   * Per rule id: the rules in force and the 100 most recently retired ones (a retired rule's
   * counters are dropped after that, and start at 0 if it comes back later).
   */
  readonly byRule: ReadonlyMap<string, Readonly<DecisionCounts>>
  /**
   * Requests this limiter admitted that still hold a concurrency slot, per rule id (rules
   * with `algorithm: concurrency`; a rule with none in flight is absent). Counts this host's
   * requests only, also when the store shares the limit across hosts.
   */
  readonly inFlight: ReadonlyMap<string, number>
}

export function zeroCounts(): DecisionCounts {
  return {
    allowed: 0,
    rejected: 0,
    queued: 0,
    dropped: 0,
    shadowRejected: 0,
    failedOpen: 0,
    denied: 0,
    allowListed: 0,
    unmatched: 0,
  }
}

export function addCounts(into: DecisionCounts, from: Readonly<DecisionCounts>): void {
  into.allowed += from.allowed
  into.rejected += from.rejected
  into.queued += from.queued
  into.dropped += from.dropped
  into.shadowRejected += from.shadowRejected
  into.failedOpen += from.failedOpen
  into.denied += from.denied
  into.allowListed += from.allowListed
  into.unmatched += from.unmatched
}
