import { performance } from 'node:perf_hooks'

/** Raised when a query could not get a connection in time: the service answers 503. */
export class PoolTimeoutError extends Error {
  override readonly name = 'PoolTimeoutError'
}

/** Options of {@link DbPool}. */
export interface DbPoolOptions {
  /** Connections: queries that run at once. */
  readonly size: number
  /** Longest wait for a connection before the query fails. */
  readonly acquireTimeoutMs: number
  /** Waiting queries beyond this fail at once. */
  readonly maxQueue: number
}

interface Waiter {
  readonly client: string
  readonly workMs: number
  readonly queuedAt: number
  readonly resolve: () => void
  readonly reject: (error: Error) => void
  timer: NodeJS.Timeout | undefined
}

/** Busy connection time per client, the "share of the resource" the demo reports. */
export interface PoolStats {
  readonly busyMsByClient: Record<string, number>
  readonly timeouts: number
  readonly peakQueue: number
  /** Longest time a query waited for a connection and then got one. */
  readonly maxWaitMs: number
}

/**
 * A simulated database connection pool: `size` connections, a FIFO queue, and an acquire
 * timeout. A query holds a connection for its work time. Under overload the queue grows,
 * every query waits longer, and past the timeout queries fail — for every client alike,
 * which is what a noisy neighbour does to a real database.
 */
export class DbPool {
  private busy = 0
  private readonly queue: Waiter[] = []
  private readonly busyMs = new Map<string, number>()
  private timeouts = 0
  private peakQueue = 0
  private maxWaitMs = 0
  private slowdown = 1

  constructor(private readonly options: DbPoolOptions) {}

  /**
   * Make every query from now on hold its connection `factor` times as long (1: back to
   * normal), as a database does when its disk, its cache or a neighbour on its host turns
   * against it. Queries already running keep their time.
   */
  slowDown(factor: number): void {
    if (!(factor > 0)) throw new RangeError(`slowDown: expected a factor above 0, got ${factor}`)
    this.slowdown = factor
  }

  /** Queries holding a connection and queries waiting for one, now. */
  load(): { readonly busy: number; readonly queued: number } {
    return { busy: this.busy, queued: this.queue.length }
  }

  /** Run a query of `workMs` for `client`; rejects with PoolTimeoutError when overloaded. */
  query(client: string, workMs: number): Promise<void> {
    if (this.busy < this.options.size) return this.run(client, workMs)
    if (this.queue.length >= this.options.maxQueue) {
      this.timeouts++
      return Promise.reject(new PoolTimeoutError('database pool queue is full'))
    }
    return new Promise<void>((resolve, reject) => {
      const waiter: Waiter = {
        client,
        workMs,
        queuedAt: performance.now(),
        resolve,
        reject,
        timer: undefined,
      }
      waiter.timer = setTimeout(() => {
        const i = this.queue.indexOf(waiter)
        if (i !== -1) this.queue.splice(i, 1)
        this.timeouts++
        reject(new PoolTimeoutError('timed out waiting for a database connection'))
      }, this.options.acquireTimeoutMs)
      this.queue.push(waiter)
      this.peakQueue = Math.max(this.peakQueue, this.queue.length)
    })
  }

  private run(client: string, workMs: number): Promise<void> {
    this.busy++
    const heldMs = workMs * this.slowdown
    this.busyMs.set(client, (this.busyMs.get(client) ?? 0) + heldMs)
    return new Promise<void>((resolve) => {
      setTimeout(() => {
        this.busy--
        resolve()
        this.next()
      }, heldMs)
    })
  }

  private next(): void {
    const waiter = this.queue.shift()
    if (waiter === undefined) return
    clearTimeout(waiter.timer)
    this.maxWaitMs = Math.max(this.maxWaitMs, performance.now() - waiter.queuedAt)
    this.run(waiter.client, waiter.workMs).then(waiter.resolve, waiter.reject)
  }

  /** Busy time per client so far. */
  stats(): PoolStats {
    return {
      busyMsByClient: Object.fromEntries(this.busyMs),
      timeouts: this.timeouts,
      peakQueue: this.peakQueue,
      maxWaitMs: this.maxWaitMs,
    }
  }

  /** Fail every waiting query (shutdown). */
  close(): void {
    for (const waiter of this.queue.splice(0)) {
      clearTimeout(waiter.timer)
      waiter.reject(new PoolTimeoutError('pool closed'))
    }
  }
}
