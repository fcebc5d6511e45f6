import type { RefundEntry } from '@floodgate/core/algorithms'
import type { WireEntry, WireMode } from './wire-format.js'

/** Most releases kept for sending again; beyond, the oldest are left to expire with their lease. */
const MAX_OWED = 10_000

/** Most releases sent in one attempt: below the store's `maxPending`, the rest follow at once. */
const PER_ATTEMPT = 256

/** The requests of one script call, as the batch queue hands them over. */
type Requests = readonly { readonly mode: WireMode; readonly entries: readonly WireEntry[] }[]

/** A named slot to free, the call's `now`, and when its lease ends anyway. */
interface Owed {
  readonly name: number
  readonly entry: RefundEntry
  readonly now: string
  readonly untilMs: number
}

/**
 * Concurrency slots Redis may hold for nothing: the call that took one was cut off by a
 * dropped connection after it left (the request passed unjudged, so nobody releases it), or
 * the call that freed one failed. Such a slot would stay taken for its whole lease, refusing
 * requests because Redis failed. Every slot is named by the store that took it and a release
 * frees only its own name (nothing once the name is gone), so a release can be sent again
 * safely: it is, with backoff, until Redis confirms it or the lease has run out.
 */
export class OwedReleases {
  /** By slot name, oldest first. */
  private readonly owed = new Map<number, Owed>()
  private timer: ReturnType<typeof setTimeout> | undefined
  private attempt = 0
  private sending = false
  private closed = false

  /**
   * @param leaseMs - The store's `concurrencyLeaseMs`: after it, Redis frees the slot itself.
   * @param connected - Whether a call sent now can be answered.
   * @param release - Free one named slot in Redis at `now` (a script call's first ARGV);
   *   rejects when that is not confirmed.
   */
  constructor(
    private readonly leaseMs: number,
    private readonly connected: () => boolean,
    private readonly release: (entry: RefundEntry, now: string) => Promise<unknown>,
  ) {}

  /** Whether a call with these requests takes (`c`) or frees (`r`) a named slot (no allocation). */
  static touchesSlots(requests: Requests): boolean {
    for (const req of requests) {
      if (req.mode !== 'c' && req.mode !== 'r') continue
      for (const e of req.entries) if (e.lease !== undefined) return true
    }
    return false
  }

  /**
   * A call with these requests failed. A release is owed again whether or not it left; a
   * slot taken only when the call left (`sent`): one refused before leaving took nothing.
   * `now` is the call's, so a caller's clock stays the caller's.
   */
  owe(requests: Requests, sent: boolean, now: string): void {
    if (this.closed) return
    const untilMs = Date.now() + this.leaseMs
    for (const req of requests) {
      if (req.mode !== 'r' && !(req.mode === 'c' && sent)) continue
      for (const e of req.entries) {
        // Owed already: it keeps its first deadline, so a Redis that keeps failing the
        // release is not asked for longer than the lease.
        if (e.lease === undefined || this.owed.has(e.lease)) continue
        const entry = { rule: e.rule, key: e.key, cost: e.cost, lease: e.lease }
        this.owed.set(e.lease, { name: e.lease, entry, now, untilMs })
      }
    }
    for (const name of this.owed.keys()) {
      if (this.owed.size <= MAX_OWED) break
      this.owed.delete(name)
    }
    this.schedule()
  }

  /** Slots owed now. */
  get size(): number {
    return this.owed.size
  }

  /** Stop: what is owed is left to expire with its lease. */
  close(): void {
    this.closed = true
    this.owed.clear()
    clearTimeout(this.timer)
    this.timer = undefined
  }

  private schedule(): void {
    if (this.timer !== undefined || this.sending || this.closed || this.owed.size === 0) return
    // As the client's reconnects: 50 ms × attempt, at most 1 s apart.
    this.timer = setTimeout(this.send, Math.min(50 * ++this.attempt, 1000))
    // Owed releases must not keep alive a process that has nothing else to do.
    this.timer.unref?.()
  }

  private readonly send = (): void => {
    this.timer = undefined
    const t = Date.now()
    const due: Owed[] = []
    for (const [name, o] of this.owed) {
      if (o.untilMs <= t) this.owed.delete(name)
      else if (due.length < PER_ATTEMPT) due.push(o)
    }
    if (due.length === 0) return
    if (!this.connected()) return this.schedule()
    this.sending = true
    void Promise.allSettled(due.map((o) => this.release(o.entry, o.now))).then((settled) => {
      this.sending = false
      let confirmed = 0
      settled.forEach((s, i) => {
        if (s.status !== 'fulfilled') return
        confirmed++
        this.owed.delete(due[i]!.name)
      })
      if (confirmed === due.length) this.attempt = 0
      this.schedule()
    })
  }
}
