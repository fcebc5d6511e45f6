import type { Sleep } from '@floodgate/client'

interface Timer {
  readonly at: number
  readonly seq: number
  readonly resolve: () => void
  cancelled: boolean
}

/** Settles every pending promise callback: a macrotask runs only once the microtasks are done. */
export function flush(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve))
}

/**
 * Virtual time for tests: `clock` reads it, `sleep` registers a timer on it (and honours its
 * signal), and `runUntil` fires the timers in time order, letting every promise chain they
 * start settle before the next one, so a whole simulation runs in a few milliseconds and the
 * same way every time.
 */
export class VirtualTime {
  private current: number
  private seq = 0
  private timers: Timer[] = []
  /** Every wait asked of `sleep`, in milliseconds. */
  readonly sleeps: number[] = []

  constructor(start = 0) {
    this.current = start
  }

  readonly clock = (): number => this.current

  readonly sleep: Sleep = (ms, signal) =>
    new Promise<void>((resolve, reject) => {
      this.sleeps.push(ms)
      if (signal?.aborted) {
        reject(signal.reason as Error)
        return
      }
      const timer: Timer = {
        at: this.current + Math.max(0, ms),
        seq: this.seq++,
        resolve: () => {
          signal?.removeEventListener('abort', onAbort)
          resolve()
        },
        cancelled: false,
      }
      const onAbort = (): void => {
        timer.cancelled = true
        reject(signal?.reason as Error)
      }
      signal?.addEventListener('abort', onAbort, { once: true })
      this.timers.push(timer)
    })

  /** Timers not yet fired nor cancelled. */
  pending(): number {
    return this.timers.filter((t) => !t.cancelled).length
  }

  /**
   * Fires every timer due by `until` in time order (first registered first among equals),
   * then leaves the clock at `until`.
   */
  async runUntil(until: number): Promise<void> {
    await flush()
    for (;;) {
      this.timers = this.timers.filter((t) => !t.cancelled)
      let next: Timer | undefined
      for (const t of this.timers) {
        if (next === undefined || t.at < next.at || (t.at === next.at && t.seq < next.seq)) next = t
      }
      if (next === undefined || next.at > until) break
      this.timers.splice(this.timers.indexOf(next), 1)
      this.current = Math.max(this.current, next.at)
      next.resolve()
      await flush()
    }
    if (Number.isFinite(until)) this.current = Math.max(this.current, until)
    await flush()
  }

  /** Fires every timer, however far ahead, leaving the clock at the last one. */
  async runAll(): Promise<void> {
    await this.runUntil(Number.POSITIVE_INFINITY)
  }

  /** Moves the clock forward by `ms`, firing what falls due on the way. */
  advance(ms: number): Promise<void> {
    return this.runUntil(this.current + ms)
  }
}
