import { SpaceSaving } from '@floodgate/core/algorithms'
import { REPORT_COUNTS, type HostReport, type ReportCounts } from './fleet-report-body.js'

/** Options of the fleet's report history (the `fleet` option of the rules service). */
export interface FleetOptions {
  /**
   * Width of one history bucket in milliseconds: the resolution of the admin page's charts.
   * @default 10000
   */
  bucketMs?: number | undefined
  /**
   * Buckets kept per service; older ones are dropped, so the history covers
   * `bucketMs × buckets` (10 minutes by default).
   * @default 60
   */
  buckets?: number | undefined
  /**
   * Hosts tracked per service. A new host beyond it displaces the one silent the longest
   * (its counts stay in the history).
   * @default 1000
   */
  maxHosts?: number | undefined
  /**
   * Rules tracked per service and bucket; counts of further rule ids in that bucket are
   * dropped (and counted in `droppedRules`).
   * @default 256
   */
  maxRules?: number | undefined
  /**
   * Clients tracked per rule and bucket (a space-saving summary: the heaviest stay).
   * @default 20
   */
  maxClients?: number | undefined
  /**
   * A host that has not reported for three of its own intervals, and at least this long, is
   * no longer listed as reporting.
   * @default 30000
   */
  hostSilenceMs?: number | undefined
  /** Milliseconds since the epoch (tests inject a clock). @default Date.now */
  now?: (() => number) | undefined
}

interface RuleBucket {
  /** Counts in this bucket; fractional, since a report is spread over the time it covers. */
  readonly counts: ReportCounts
  readonly clients: SpaceSaving
}

interface Bucket {
  readonly start: number
  readonly rules: Map<string, RuleBucket>
}

interface HostSeen {
  lastSeen: number
  /** When it stops being listed as reporting. */
  expires: number
}

interface ServiceHistory {
  /** Insertion order is last-seen order: the first entry is the one silent the longest. */
  readonly hosts: Map<string, HostSeen>
  /** By bucket start, oldest first. */
  readonly buckets: Map<number, Bucket>
  droppedRules: number
}

/** One rule's part of the fleet view. */
export interface FleetRuleView {
  readonly id: string
  /** Counts over the whole history, rounded. */
  readonly totals: ReportCounts
  /**
   * Decisions per second in each complete bucket, oldest first, beside `FleetView.times`
   * (the bucket still filling is left out: its rate would look low).
   */
  readonly perSecond: Record<(typeof REPORT_COUNTS)[number], number[]>
  /** The clients refused most often over the history, across hosts, most first. */
  readonly top: readonly { readonly client: string; readonly count: number }[]
}

/** What the fleet reported for one service. */
export interface FleetView {
  readonly bucketMs: number
  /** The history kept, in milliseconds. */
  readonly windowMs: number
  /** Start (ms since the epoch) of each complete bucket in `perSecond`, oldest first. */
  readonly times: readonly number[]
  /** Hosts that reported recently, the most recent first (at most 50 listed). */
  readonly hosts: readonly { readonly host: string; readonly lastSeen: number }[]
  /** How many hosts reported recently. */
  readonly hostCount: number
  readonly rules: readonly FleetRuleView[]
  /** Counts of rules beyond `maxRules` in a bucket, dropped since the service started. */
  readonly droppedRules: number
}

const zero = (): ReportCounts => ({
  allowed: 0,
  queued: 0,
  rejected: 0,
  dropped: 0,
  shadowRejected: 0,
  failedOpen: 0,
})

const positiveInt = (name: string, value: number | undefined, fallback: number): number => {
  const v = value ?? fallback
  if (!Number.isInteger(v) || v < 1) {
    throw new TypeError(`fleet.${name}: expected a positive integer, got ${String(v)}`)
  }
  return v
}

/**
 * What hosts reported with their polls, per service: a short history of decision counts per
 * rule in fixed-width buckets, the clients refused most often, and which hosts are reporting.
 * Everything is in memory and bounded: `buckets × maxRules × maxClients` entries per service
 * at most, `maxHosts` hosts per service; a restart starts an empty history.
 */
export class FleetReports {
  readonly #services = new Map<string, ServiceHistory>()
  readonly #bucketMs: number
  readonly #buckets: number
  readonly #maxHosts: number
  readonly #maxRules: number
  readonly #maxClients: number
  readonly #hostSilenceMs: number
  readonly #now: () => number

  constructor(options: FleetOptions = {}) {
    this.#bucketMs = positiveInt('bucketMs', options.bucketMs, 10_000)
    this.#buckets = positiveInt('buckets', options.buckets, 60)
    this.#maxHosts = positiveInt('maxHosts', options.maxHosts, 1000)
    this.#maxRules = positiveInt('maxRules', options.maxRules, 256)
    this.#maxClients = positiveInt('maxClients', options.maxClients, 20)
    this.#hostSilenceMs = positiveInt('hostSilenceMs', options.hostSilenceMs, 30_000)
    this.#now = options.now ?? Date.now
  }

  get #windowMs(): number {
    return this.#bucketMs * this.#buckets
  }

  /**
   * Add one host's report to a service's history. Its counts are spread evenly over the time
   * they cover (`intervalMs` before now, cut to the history), so a fleet polling every 10 s
   * draws a smooth line whatever the bucket width; its clients go to the current bucket.
   *
   * @param service - the service (known to exist)
   * @param report - a validated report
   */
  add(service: string, report: HostReport): void {
    const now = this.#now()
    let history = this.#services.get(service)
    if (history === undefined) {
      history = { hosts: new Map(), buckets: new Map(), droppedRules: 0 }
      this.#services.set(service, history)
    }
    this.#prune(history, now)

    const { hosts } = history
    hosts.delete(report.host)
    if (hosts.size >= this.#maxHosts) {
      const oldest = hosts.keys().next()
      if (oldest.done !== true) hosts.delete(oldest.value)
    }
    hosts.set(report.host, {
      lastSeen: now,
      expires: now + Math.max(3 * report.intervalMs, this.#hostSilenceMs),
    })

    const from = Math.max(now - report.intervalMs, now - this.#windowMs)
    const span = now - from
    for (const rule of report.rules) {
      // Spread the counts: each bucket the interval overlaps gets its share of it.
      for (let start = this.#bucketOf(from); start <= now; start += this.#bucketMs) {
        const overlap =
          span === 0 ? 1 : (Math.min(start + this.#bucketMs, now) - Math.max(start, from)) / span
        if (overlap <= 0) continue
        const bucket = this.#ruleBucket(history, start, rule.id)
        if (bucket === undefined) break
        for (const name of REPORT_COUNTS) bucket.counts[name] += rule.counts[name] * overlap
      }
      if (rule.top.length > 0) {
        const current = this.#ruleBucket(history, this.#bucketOf(now), rule.id)
        for (const { client, count } of rule.top) {
          if (count > 0) current?.clients.add(client, count)
        }
      }
    }
  }

  /**
   * The service's history, for the admin page.
   *
   * @param service - the service
   * @returns the view (empty when no host reported within the history)
   */
  view(service: string): FleetView {
    const now = this.#now()
    const history = this.#services.get(service)
    if (history !== undefined) {
      this.#prune(history, now)
      // A service whose hosts all went quiet for the whole history holds nothing any more.
      if (history.buckets.size === 0 && history.hosts.size === 0) this.#services.delete(service)
    }
    const current = this.#bucketOf(now)
    const first = current - (this.#buckets - 1) * this.#bucketMs
    const times: number[] = []
    for (let t = first; t < current; t += this.#bucketMs) times.push(t)
    const seconds = this.#bucketMs / 1000

    const ids = new Set<string>()
    for (const bucket of history?.buckets.values() ?? []) {
      for (const id of bucket.rules.keys()) ids.add(id)
    }
    const rules = [...ids].sort().map((id): FleetRuleView => {
      const totals = zero()
      const perSecond = Object.fromEntries(
        REPORT_COUNTS.map((name) => [name, times.map(() => 0)]),
      ) as FleetRuleView['perSecond']
      const clients = new Map<string, number>()
      for (const bucket of history?.buckets.values() ?? []) {
        const rule = bucket.rules.get(id)
        if (rule === undefined) continue
        const at = (bucket.start - first) / this.#bucketMs
        for (const name of REPORT_COUNTS) {
          totals[name] += rule.counts[name]
          if (at < times.length) perSecond[name][at] = round(rule.counts[name] / seconds)
        }
        for (const h of rule.clients.top()) {
          clients.set(h.key, (clients.get(h.key) ?? 0) + h.count)
        }
      }
      for (const name of REPORT_COUNTS) totals[name] = Math.round(totals[name])
      const top = [...clients]
        .sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1))
        .slice(0, this.#maxClients)
        .map(([client, count]) => ({ client, count }))
      return { id, totals, perSecond, top }
    })
    const hosts = [...(history?.hosts ?? [])]
      .reverse()
      .map(([host, seen]) => ({ host, lastSeen: seen.lastSeen }))
    return {
      bucketMs: this.#bucketMs,
      windowMs: this.#windowMs,
      times,
      hosts: hosts.slice(0, 50),
      hostCount: hosts.length,
      rules,
      droppedRules: history?.droppedRules ?? 0,
    }
  }

  /** Services, hosts and buckets held now (for tests of the bounds). */
  get size(): { services: number; hosts: number; buckets: number; rules: number } {
    let hosts = 0
    let buckets = 0
    let rules = 0
    for (const s of this.#services.values()) {
      hosts += s.hosts.size
      buckets += s.buckets.size
      for (const b of s.buckets.values()) rules += b.rules.size
    }
    return { services: this.#services.size, hosts, buckets, rules }
  }

  /**
   * Forget a service's history; also called for services that no longer exist.
   *
   * @param service - the service
   */
  forget(service: string): void {
    this.#services.delete(service)
  }

  #bucketOf(time: number): number {
    return Math.floor(time / this.#bucketMs) * this.#bucketMs
  }

  #ruleBucket(history: ServiceHistory, start: number, id: string): RuleBucket | undefined {
    let bucket = history.buckets.get(start)
    if (bucket === undefined) {
      bucket = { start, rules: new Map() }
      history.buckets.set(start, bucket)
    }
    let rule = bucket.rules.get(id)
    if (rule === undefined) {
      if (bucket.rules.size >= this.#maxRules) {
        history.droppedRules += 1
        return undefined
      }
      rule = { counts: zero(), clients: new SpaceSaving(this.#maxClients) }
      bucket.rules.set(id, rule)
    }
    return rule
  }

  /** Drop buckets older than the history and hosts that went silent. */
  #prune(history: ServiceHistory, now: number): void {
    const oldest = this.#bucketOf(now) - (this.#buckets - 1) * this.#bucketMs
    for (const start of history.buckets.keys()) {
      if (start < oldest) history.buckets.delete(start)
    }
    for (const [host, seen] of history.hosts) {
      if (seen.expires <= now) history.hosts.delete(host)
    }
  }
}

const round = (n: number): number => Math.round(n * 1000) / 1000
