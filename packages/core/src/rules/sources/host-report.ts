import { hostname } from 'node:os'
import type { DecisionCounts, CountersSnapshot } from '../../limiter-counters.js'
import type { TopClient, TopClientsQuery } from '../../limiter-top-clients.js'
import { isPrintable } from '../../keys/printable-key.js'
import { checkIntInRange, checkKnownKeys, checkObject, optionError } from '../../options/checks.js'

/**
 * What a limiter shows a rules source that reports (passed to `RulesSource.start`): its
 * counters and, when it keeps them, its top limited clients.
 */
export interface ReportingLimiter {
  counters(): CountersSnapshot
  /** Absent (or throwing) when the limiter keeps no top clients. */
  topClients?(ruleId: string, options?: TopClientsQuery): readonly TopClient[]
}

/** Options of the report `httpRules` sends with each poll (`report: true` takes them all by default). */
export interface HostReportOptions {
  /**
   * How this process names itself to the service (1-128 letters, digits, `.`, `_`, `:`, `@`,
   * `-`). Give each process its own.
   * @default `<hostname>-<pid>`
   */
  readonly host?: string | undefined
  /**
   * Clients sent per rule (the ones refused most since the previous report); 0 sends counts
   * only.
   * @default 10
   */
  readonly topClients?: number | undefined
  /**
   * Largest report body in bytes. Past it, the least busy rules' clients are left out, then
   * the least busy rules (their counts go with the next report). Keep it under the service's
   * `bodyLimit` (64 KiB by default).
   * @default 60000
   */
  readonly maxBytes?: number | undefined
  /**
   * Where to send it. By default the poll URL with its last segment (`ruleset`, `rules`)
   * replaced by `report`.
   */
  readonly url?: string | URL | undefined
}

/** The counts a report carries per rule (the rules service's `REPORT_COUNTS`). */
const REPORTED = [
  'allowed',
  'queued',
  'rejected',
  'dropped',
  'shadowRejected',
  'failedOpen',
] as const satisfies readonly (keyof DecisionCounts)[]

type Counts = Record<(typeof REPORTED)[number], number>

interface RuleEntry {
  id: string
  counts: Partial<Counts>
  top: { client: string; count: number }[]
  /** Decisions in this report, to keep the busiest rules when the body must shrink. */
  weight: number
}

// The service's bounds: a report past them is refused whole.
const MAX_HOST = 128
const MAX_RULES = 256
const MAX_TOP = 20
const MAX_INTERVAL_MS = 3_600_000
const HOST = /^[A-Za-z0-9][A-Za-z0-9._:@-]{0,127}$/

/** A report ready to send; `acknowledged()` once the service accepted it. */
export interface PendingReport {
  readonly body: string
  acknowledged(): void
}

/** The checked options. */
export interface HostReportSettings {
  readonly host: string
  readonly topClients: number
  readonly maxBytes: number
  readonly url: URL | undefined
}

/**
 * Check `httpRules`' `report` option.
 *
 * @param value - `true`, `false`/undefined, or the options
 * @returns the settings, or undefined when reports are off
 */
export function checkHostReportOptions(
  value: boolean | HostReportOptions | undefined,
): HostReportSettings | undefined {
  if (value === undefined || value === false) return undefined
  const o = value === true ? {} : value
  checkObject('httpRules: report', o)
  checkKnownKeys('httpRules: report', o, ['host', 'topClients', 'maxBytes', 'url'])
  const host = o.host ?? `${hostname()}-${process.pid}`.replace(/[^A-Za-z0-9._:@-]/g, '-')
  if (typeof host !== 'string' || !HOST.test(host)) {
    throw optionError(
      'httpRules: report.host',
      `1-${MAX_HOST} letters, digits, '.', '_', ':', '@' or '-', starting with a letter or digit`,
      host,
    )
  }
  let url: URL | undefined
  if (o.url !== undefined) {
    try {
      url = new URL(o.url)
    } catch {
      throw optionError('httpRules: report.url', 'an absolute http(s) URL', String(o.url))
    }
  }
  return {
    host,
    topClients: checkIntInRange('httpRules: report.topClients', o.topClients, 10, 0, MAX_TOP),
    maxBytes: checkIntInRange('httpRules: report.maxBytes', o.maxBytes, 60_000, 1024, 2 ** 30),
    url,
  }
}

/**
 * Builds the reports a host sends with its polls: each rule's counters and top refused
 * clients since the previous report the service accepted. A report that fails to arrive is
 * not lost: its counts go with the next one.
 */
export class HostReporter {
  #limiter: ReportingLimiter | undefined
  #ackedAt: number
  /** Counters and client counts as of the last accepted report. */
  readonly #acked = new Map<string, { counts: Counts; clients: Map<string, number> }>()

  constructor(
    private readonly settings: HostReportSettings,
    private readonly now: () => number = Date.now,
  ) {
    this.#ackedAt = now()
  }

  /** The limiter whose counters are reported (set by `start`). */
  attach(limiter: ReportingLimiter | undefined): void {
    this.#limiter = limiter
    this.#ackedAt = this.now()
  }

  /** @returns the next report, or undefined before a limiter is attached */
  next(): PendingReport | undefined {
    const limiter = this.#limiter
    if (limiter === undefined) return undefined
    const now = this.now()
    const byRule = limiter.counters().byRule
    const entries: RuleEntry[] = []
    const seen = new Map<string, { counts: Counts; clients: Map<string, number> }>()
    for (const [id, current] of byRule) {
      const before = this.#acked.get(id)
      const counts = pick(current)
      // A count lower than before means the rule's counters started again (it was removed
      // and added back): all of it is new.
      const restarted = before !== undefined && REPORTED.some((k) => counts[k] < before.counts[k])
      const delta: Partial<Counts> = {}
      let weight = 0
      for (const k of REPORTED) {
        const d = before === undefined || restarted ? counts[k] : counts[k] - before.counts[k]
        if (d > 0) {
          delta[k] = d
          weight += d
        }
      }
      const clients = new Map<string, number>()
      const top: { client: string; count: number }[] = []
      for (const c of this.#top(limiter, id)) {
        // The service refuses a whole report for one client it cannot show (a control
        // character, too long), and the client would be in every later report too: a
        // limiter's topClients() prints every key, but a client that is not printable is left
        // out rather than cost the host its reports.
        if (!isPrintable(c.client)) continue
        clients.set(c.client, c.count)
        const prev = restarted ? undefined : before?.clients.get(c.client)
        const d = prev === undefined || c.count < prev ? c.count : c.count - prev
        if (d > 0) top.push({ client: c.client, count: d })
      }
      seen.set(id, { counts, clients })
      if (weight > 0 || top.length > 0) entries.push({ id, counts: delta, top, weight })
    }
    entries.sort((a, b) => b.weight - a.weight || (a.id < b.id ? -1 : 1))
    const sent = this.#fit(entries.slice(0, MAX_RULES), now)
    const body = sent.body
    return {
      body,
      acknowledged: () => {
        this.#ackedAt = now
        for (const [id, state] of seen) {
          // A rule left out of the body keeps its old baseline: its counts go next time.
          if (sent.ids.has(id) || !entries.some((e) => e.id === id)) this.#acked.set(id, state)
        }
        for (const id of this.#acked.keys()) if (!byRule.has(id)) this.#acked.delete(id)
      },
    }
  }

  #top(limiter: ReportingLimiter, id: string): readonly TopClient[] {
    if (this.settings.topClients === 0 || limiter.topClients === undefined) return []
    try {
      return limiter.topClients(id, { limit: this.settings.topClients })
    } catch {
      // A limiter created with `topClients: false` keeps none: counts only.
      return []
    }
  }

  /** Serialize, leaving out clients and then rules (least busy first) until it fits. */
  #fit(entries: RuleEntry[], now: number): { body: string; ids: Set<string> } {
    const intervalMs = Math.min(MAX_INTERVAL_MS, Math.max(1, now - this.#ackedAt))
    const serialize = (list: RuleEntry[]) =>
      JSON.stringify({
        host: this.settings.host,
        intervalMs,
        rules: list.map((e) => ({ id: e.id, counts: e.counts, top: e.top })),
      })
    let list = entries
    let body = serialize(list)
    for (let i = list.length - 1; Buffer.byteLength(body) > this.settings.maxBytes && i >= 0; i--) {
      list = list.map((e, j) => (j === i ? { ...e, top: [] } : e))
      body = serialize(list)
    }
    while (Buffer.byteLength(body) > this.settings.maxBytes && list.length > 0) {
      list = list.slice(0, -1)
      body = serialize(list)
    }
    return { body, ids: new Set(list.map((e) => e.id)) }
  }
}

function pick(counts: Readonly<DecisionCounts>): Counts {
  return {
    allowed: counts.allowed,
    queued: counts.queued,
    rejected: counts.rejected,
    dropped: counts.dropped,
    shadowRejected: counts.shadowRejected,
    failedOpen: counts.failedOpen,
  }
}

/**
 * The report URL for a poll URL: its last path segment replaced by `report`.
 *
 * @param poll - the poll URL
 * @returns the report URL
 */
export function reportUrlFor(poll: URL): URL {
  const url = new URL(poll)
  url.pathname = url.pathname.replace(/\/[^/]*\/?$/, '/report')
  return url
}
