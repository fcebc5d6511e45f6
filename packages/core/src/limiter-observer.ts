/**
 * What a metrics exporter learns from a limiter as it happens, besides `counters()` (which it
 * reads when scraped). Every method is optional; a limiter with no observer that wants store
 * timings reads no clock for them. Methods should not throw (a throw, or the rejection of a
 * promise a method returns, is logged and ignored) and should be quick: they run on the request
 * path.
 */
export interface LimiterObserver {
  /**
   * A request was queued: the rule that set the wait and the wait, in milliseconds.
   */
  queued?(ruleId: string, waitMs: number): void
  /**
   * A store call to decide a request settled: how long it took, in milliseconds (high
   * resolution), and whether it answered (`false`: it threw or rejected). An answer that came
   * after the limiter's deadline is reported too, with its full duration. Only asynchronous
   * stores (such as the Redis store) are timed: a synchronous one (`store.synchronous`, such as
   * MemoryStore) answers within the call.
   */
  storeCall?(durationMs: number, ok: boolean): void
}
