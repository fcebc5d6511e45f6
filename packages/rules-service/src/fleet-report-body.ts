// The body a host sends with its poll (`POST /v1/services/:service/report`). Everything in it
// ends up in the service's memory, so every size is bounded here, where the request enters,
// and anything else is refused with a message naming the field.

/** The decision counts a host reports per rule: its counters since its previous report. */
export const REPORT_COUNTS = [
  'allowed',
  'queued',
  'rejected',
  'dropped',
  'shadowRejected',
  'failedOpen',
] as const

/** One of {@link REPORT_COUNTS}. */
export type ReportCount = (typeof REPORT_COUNTS)[number]

/** Counts by outcome (missing ones are 0). */
export type ReportCounts = Record<ReportCount, number>

/** One rule's part of a host report. */
export interface RuleReport {
  readonly id: string
  readonly counts: Readonly<ReportCounts>
  /** Clients this rule refused (or, shadow, would have refused) since the previous report. */
  readonly top: readonly { readonly client: string; readonly count: number }[]
}

/** A validated host report. */
export interface HostReport {
  /** The reporting host (process), as it names itself. */
  readonly host: string
  /** Milliseconds the counts cover: the time since the host's previous accepted report. */
  readonly intervalMs: number
  readonly rules: readonly RuleReport[]
}

/** The bounds a report must keep; the host side trims to the same numbers. */
export const REPORT_LIMITS = {
  /** Longest host id. */
  hostLength: 128,
  /** Rules per report. */
  rules: 256,
  /** Longest rule id. */
  ruleIdLength: 200,
  /** Clients per rule. */
  top: 20,
  /** Longest client (a `sha256:` hash, or a key the owner chose to show in clear). */
  clientLength: 256,
  /** Largest count (per outcome or client) in one report. */
  count: 1e12,
  /** Longest interval one report may cover: one hour. */
  intervalMs: 3_600_000,
} as const

const HOST = /^[A-Za-z0-9][A-Za-z0-9._:@-]*$/
// Printable characters only: ids and clients are shown on the admin page. A lone surrogate
// (\p{Cs} under the u flag) is no text; a surrogate pair is one character, an emoji.
// eslint-disable-next-line no-control-regex -- control characters are what is refused
const CONTROL = /[\u0000-\u001f\u007f]|\p{Cs}/u

const isObject = (value: unknown): value is Record<string, unknown> =>
  value !== null && typeof value === 'object' && !Array.isArray(value)

const show = (value: unknown): string => {
  const text = JSON.stringify(value) ?? String(value)
  return text.length > 60 ? `${text.slice(0, 57)}...` : text
}

/** Thrown with the first problem found; the route turns it into a 400. */
export class ReportError extends Error {}

function unknownKeys(where: string, value: Record<string, unknown>, known: readonly string[]) {
  const extra = Object.keys(value).filter((k) => !known.includes(k))
  if (extra.length > 0) {
    throw new ReportError(
      `${where}: unknown field ${show(extra[0])} (expected ${known.join(', ')})`,
    )
  }
}

function count(where: string, value: unknown): number {
  if (
    typeof value !== 'number' ||
    !Number.isInteger(value) ||
    value < 0 ||
    value > REPORT_LIMITS.count
  ) {
    throw new ReportError(
      `${where}: expected an integer from 0 to ${REPORT_LIMITS.count}, got ${show(value)}`,
    )
  }
  return value
}

function text(where: string, value: unknown, max: number): string {
  if (typeof value !== 'string' || value.length === 0 || value.length > max) {
    throw new ReportError(`${where}: expected a string of 1-${max} characters, got ${show(value)}`)
  }
  if (CONTROL.test(value)) {
    throw new ReportError(`${where}: control characters or unpaired surrogates are not allowed`)
  }
  return value
}

function ruleReport(where: string, value: unknown): RuleReport {
  if (!isObject(value)) throw new ReportError(`${where}: expected an object, got ${show(value)}`)
  unknownKeys(where, value, ['id', 'counts', 'top'])
  const id = text(`${where}.id`, value.id, REPORT_LIMITS.ruleIdLength)
  const raw = value.counts ?? {}
  if (!isObject(raw)) throw new ReportError(`${where}.counts: expected an object, got ${show(raw)}`)
  unknownKeys(`${where}.counts`, raw, REPORT_COUNTS)
  const counts = {} as ReportCounts
  for (const name of REPORT_COUNTS) counts[name] = count(`${where}.counts.${name}`, raw[name] ?? 0)
  const rawTop = value.top ?? []
  if (!Array.isArray(rawTop) || rawTop.length > REPORT_LIMITS.top) {
    throw new ReportError(
      `${where}.top: expected an array of at most ${REPORT_LIMITS.top} clients, got ${Array.isArray(rawTop) ? `${rawTop.length} entries` : show(rawTop)}`,
    )
  }
  // A client listed twice would count twice in the fleet's top clients, as a rule named
  // twice would in its totals (refused below): a host never sends either.
  const clients = new Set<string>()
  const top = rawTop.map((entry: unknown, i) => {
    const at = `${where}.top[${i}]`
    if (!isObject(entry)) throw new ReportError(`${at}: expected an object, got ${show(entry)}`)
    unknownKeys(at, entry, ['client', 'count'])
    const client = text(`${at}.client`, entry.client, REPORT_LIMITS.clientLength)
    if (clients.has(client)) throw new ReportError(`${at}.client: duplicate client ${show(client)}`)
    clients.add(client)
    return { client, count: count(`${at}.count`, entry.count) }
  })
  return { id, counts, top }
}

/**
 * Check a report body.
 *
 * @param body - the parsed JSON
 * @returns the report
 * @throws ReportError naming the first field that is wrong
 */
export function parseHostReport(body: unknown): HostReport {
  if (!isObject(body))
    throw new ReportError(`expected a JSON object { host, intervalMs, rules }, got ${show(body)}`)
  unknownKeys('report', body, ['host', 'intervalMs', 'rules'])
  const host = text('host', body.host, REPORT_LIMITS.hostLength)
  if (!HOST.test(host)) {
    throw new ReportError(
      `host: expected letters, digits, '.', '_', ':', '@' or '-', starting with a letter or digit, got ${show(host)}`,
    )
  }
  const intervalMs = body.intervalMs
  if (
    typeof intervalMs !== 'number' ||
    !Number.isInteger(intervalMs) ||
    intervalMs < 1 ||
    intervalMs > REPORT_LIMITS.intervalMs
  ) {
    throw new ReportError(
      `intervalMs: expected an integer from 1 to ${REPORT_LIMITS.intervalMs}, got ${show(intervalMs)}`,
    )
  }
  if (!Array.isArray(body.rules) || body.rules.length > REPORT_LIMITS.rules) {
    throw new ReportError(
      `rules: expected an array of at most ${REPORT_LIMITS.rules} rules, got ${Array.isArray(body.rules) ? `${body.rules.length} entries` : show(body.rules)}`,
    )
  }
  const rules = body.rules.map((r: unknown, i) => ruleReport(`rules[${i}]`, r))
  const ids = new Set<string>()
  for (const [i, r] of rules.entries()) {
    if (ids.has(r.id)) throw new ReportError(`rules[${i}].id: duplicate rule ${show(r.id)}`)
    ids.add(r.id)
  }
  return { host, intervalMs, rules }
}
