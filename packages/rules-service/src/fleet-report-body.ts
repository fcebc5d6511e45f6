// The body a host sends with its poll (`POST /v1/services/:service/report`). Everything in it
// ends up in the service's memory, so every size is bounded here, where the request enters,
// and anything else is refused with a message naming the field.
import { showValue } from './show-value.js'

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

/** Most problems one refusal lists: a hostile body could otherwise have one per key. */
const MAX_ISSUES = 50

/** Thrown with every problem found (up to 50); the route turns it into a 400 naming each. */
export class ReportError extends Error {
  /** Each problem as `path: message`, in the order of the body. */
  readonly issues: readonly string[]

  /** @param issues - the problems, at least one */
  constructor(issues: readonly string[]) {
    const shown =
      issues.length > MAX_ISSUES
        ? [
            ...issues.slice(0, MAX_ISSUES),
            `(${issues.length - MAX_ISSUES} more problems not listed)`,
          ]
        : issues
    super(shown.join('; '))
    this.name = 'ReportError'
    this.issues = shown
  }
}

// Each check below records what is wrong and goes on, so one refusal names every field at
// fault rather than the first one checked; a host (or whoever wrote the report) fixes them all
// at once.

function unknownKeys(
  issues: string[],
  where: string,
  value: Record<string, unknown>,
  known: readonly string[],
): void {
  for (const key of Object.keys(value)) {
    if (!known.includes(key))
      issues.push(`${where}: unknown field ${showValue(key)} (expected ${known.join(', ')})`)
  }
}

function count(issues: string[], where: string, value: unknown): number {
  if (
    typeof value !== 'number' ||
    !Number.isInteger(value) ||
    value < 0 ||
    value > REPORT_LIMITS.count
  ) {
    issues.push(
      `${where}: expected an integer from 0 to ${REPORT_LIMITS.count}, got ${showValue(value)}`,
    )
    return 0
  }
  return value
}

function text(issues: string[], where: string, value: unknown, max: number): string | undefined {
  if (typeof value !== 'string' || value.length === 0 || value.length > max) {
    issues.push(`${where}: expected a string of 1-${max} characters, got ${showValue(value)}`)
    return undefined
  }
  if (CONTROL.test(value)) {
    issues.push(`${where}: control characters or unpaired surrogates are not allowed`)
    return undefined
  }
  return value
}

function ruleReport(issues: string[], where: string, value: unknown): RuleReport | undefined {
  if (!isObject(value)) {
    issues.push(`${where}: expected an object, got ${showValue(value)}`)
    return undefined
  }
  unknownKeys(issues, where, value, ['id', 'counts', 'top'])
  const id = text(issues, `${where}.id`, value.id, REPORT_LIMITS.ruleIdLength)
  const raw = value.counts ?? {}
  const counts = {} as ReportCounts
  if (!isObject(raw)) issues.push(`${where}.counts: expected an object, got ${showValue(raw)}`)
  else unknownKeys(issues, `${where}.counts`, raw, REPORT_COUNTS)
  for (const name of REPORT_COUNTS) {
    const given = isObject(raw) ? raw[name] : undefined
    counts[name] = count(issues, `${where}.counts.${name}`, given ?? 0)
  }
  const rawTop = value.top ?? []
  if (!Array.isArray(rawTop) || rawTop.length > REPORT_LIMITS.top) {
    issues.push(
      `${where}.top: expected an array of at most ${REPORT_LIMITS.top} clients, got ${Array.isArray(rawTop) ? `${rawTop.length} entries` : showValue(rawTop)}`,
    )
    return id === undefined ? undefined : { id, counts, top: [] }
  }
  // A client listed twice would count twice in the fleet's top clients, as a rule named
  // twice would in its totals (refused below): a host never sends either.
  const clients = new Set<string>()
  const top: { client: string; count: number }[] = []
  rawTop.forEach((entry: unknown, i) => {
    const at = `${where}.top[${i}]`
    if (!isObject(entry)) {
      issues.push(`${at}: expected an object, got ${showValue(entry)}`)
      return
    }
    unknownKeys(issues, at, entry, ['client', 'count'])
    const client = text(issues, `${at}.client`, entry.client, REPORT_LIMITS.clientLength)
    if (client !== undefined && clients.has(client))
      issues.push(`${at}.client: duplicate client ${showValue(client)}`)
    if (client !== undefined) clients.add(client)
    const n = count(issues, `${at}.count`, entry.count)
    if (client !== undefined) top.push({ client, count: n })
  })
  return id === undefined ? undefined : { id, counts, top }
}

/**
 * Check a report body.
 *
 * @param body - the parsed JSON
 * @returns the report
 * @throws ReportError naming every field that is wrong
 */
export function parseHostReport(body: unknown): HostReport {
  if (!isObject(body))
    throw new ReportError([
      `expected a JSON object { host, intervalMs, rules }, got ${showValue(body)}`,
    ])
  const issues: string[] = []
  unknownKeys(issues, 'report', body, ['host', 'intervalMs', 'rules'])
  const host = text(issues, 'host', body.host, REPORT_LIMITS.hostLength)
  if (host !== undefined && !HOST.test(host)) {
    issues.push(
      `host: expected letters, digits, '.', '_', ':', '@' or '-', starting with a letter or digit, got ${showValue(host)}`,
    )
  }
  const intervalMs = body.intervalMs
  if (
    typeof intervalMs !== 'number' ||
    !Number.isInteger(intervalMs) ||
    intervalMs < 1 ||
    intervalMs > REPORT_LIMITS.intervalMs
  ) {
    issues.push(
      `intervalMs: expected an integer from 1 to ${REPORT_LIMITS.intervalMs}, got ${showValue(intervalMs)}`,
    )
  }
  const rules: RuleReport[] = []
  if (!Array.isArray(body.rules) || body.rules.length > REPORT_LIMITS.rules) {
    issues.push(
      `rules: expected an array of at most ${REPORT_LIMITS.rules} rules, got ${Array.isArray(body.rules) ? `${body.rules.length} entries` : showValue(body.rules)}`,
    )
  } else {
    const ids = new Set<string>()
    const repeats: string[] = []
    body.rules.forEach((r: unknown, i) => {
      const rule = ruleReport(issues, `rules[${i}]`, r)
      if (rule === undefined) return
      if (ids.has(rule.id)) repeats.push(`rules[${i}].id: duplicate rule ${showValue(rule.id)}`)
      ids.add(rule.id)
      rules.push(rule)
    })
    // Each rule is read whole (its top included) before the ids are compared.
    issues.push(...repeats)
  }
  if (issues.length > 0) throw new ReportError(issues)
  return { host: host!, intervalMs: intervalMs as number, rules }
}
