/** A header bag: the WHATWG `Headers` of a fetch `Response` fits. */
export interface HeaderReader {
  get(name: string): string | null
}

const DELTA_SECONDS = /^\d+(?:\.\d+)?$/

const MONTHS = ['jan', 'feb', 'mar', 'apr', 'may', 'jun', 'jul', 'aug', 'sep', 'oct', 'nov', 'dec']
const DAY = '(?:mon|tue|wed|thu|fri|sat|sun)'
const LONG_DAY = '(?:monday|tuesday|wednesday|thursday|friday|saturday|sunday)'
const MONTH = '(jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)'
const TIME = '(\\d{2}):(\\d{2}):(\\d{2})'
// One member of the field (a repeated header arrives joined by commas): delay seconds or one of
// the three HTTP-date forms of RFC 9110 §5.6.7, each followed by a comma or the end.
const END = '\\s*(?:,|$)'
const MEMBER_FORMS: readonly [form: 'delta' | 'imf' | 'rfc850' | 'asctime', pattern: RegExp][] = [
  ['delta', new RegExp(`^(\\d+(?:\\.\\d+)?)${END}`)],
  // IMF-fixdate: Sun, 06 Nov 1994 08:49:37 GMT
  ['imf', new RegExp(`^${DAY},\\s+(\\d{2})\\s+${MONTH}\\s+(\\d{4})\\s+${TIME}\\s+GMT${END}`, 'i')],
  // RFC 850: Sunday, 06-Nov-94 08:49:37 GMT
  [
    'rfc850',
    new RegExp(`^${LONG_DAY},\\s+(\\d{2})-${MONTH}-(\\d{2})\\s+${TIME}\\s+GMT${END}`, 'i'),
  ],
  // asctime: Sun Nov  6 08:49:37 1994 (no zone: GMT, as every HTTP-date)
  ['asctime', new RegExp(`^${DAY}\\s+${MONTH}\\s+(\\d{1,2})\\s+${TIME}\\s+(\\d{4})${END}`, 'i')],
]

/** Epoch ms of a GMT date, or undefined when a field is out of range (31 Feb, 25:00). */
function gmt(
  year: number,
  month: string,
  day: number,
  h: number,
  m: number,
  s: number,
): number | undefined {
  // A leap second (60) is allowed (RFC 9110 §5.6.7); any other out-of-range field is not.
  if (h > 23 || m > 59 || s > 60) return undefined
  const monthIndex = MONTHS.indexOf(month.toLowerCase())
  // setUTCFullYear, because Date.UTC reads the years 0-99 as 1900-1999.
  const midnight = new Date(0)
  midnight.setUTCFullYear(year, monthIndex, day)
  if (midnight.getUTCDate() !== day || midnight.getUTCMonth() !== monthIndex) return undefined
  return midnight.getTime() + ((h * 60 + m) * 60 + s) * 1000
}

/**
 * Epoch ms of an RFC 850 date, whose year has two digits: the date in this century, or in the
 * last one when that appears more than 50 years in the future (RFC 9110 §5.6.7). The whole
 * date is compared, not the year: on 2026-11-22, `22-Nov-76 00:00:09` is 1976.
 */
function rfc850Date(
  twoDigits: number,
  month: string,
  day: number,
  h: number,
  m: number,
  s: number,
  nowMs: number,
): number | undefined {
  const thisYear = new Date(nowMs).getUTCFullYear()
  const year = thisYear - (thisYear % 100) + twoDigits
  const fiftyYearsOn = new Date(nowMs)
  fiftyYearsOn.setUTCFullYear(thisYear + 50)
  const ms = gmt(year, month, day, h, m, s)
  // A 29 Feb that this century's year lacks (2100) is read in the last century's (2000).
  if (ms !== undefined && ms <= fiftyYearsOn.getTime()) return ms
  return gmt(year - 100, month, day, h, m, s)
}

/** The delay one member asks for, in ms, and its length in `text`; undefined when unreadable. */
function readMember(
  text: string,
  nowMs: number,
): [ms: number | undefined, length: number] | undefined {
  for (const [form, pattern] of MEMBER_FORMS) {
    const m = pattern.exec(text)
    if (m === null) continue
    const g = m.slice(1).map((part) => part ?? '')
    let dateMs: number | undefined
    if (form === 'delta') return [Number(g[0]) * 1000, m[0].length]
    if (form === 'imf') dateMs = gmt(+g[2]!, g[1]!, +g[0]!, +g[3]!, +g[4]!, +g[5]!)
    else if (form === 'rfc850') {
      dateMs = rfc850Date(+g[2]!, g[1]!, +g[0]!, +g[3]!, +g[4]!, +g[5]!, nowMs)
    } else dateMs = gmt(+g[5]!, g[0]!, +g[1]!, +g[2]!, +g[3]!, +g[4]!)
    return [dateMs === undefined ? undefined : Math.max(0, dateMs - nowMs), m[0].length]
  }
  return undefined
}

/**
 * Parses a `Retry-After` value (RFC 9110 §10.2.3): delay seconds (`120`) or an HTTP date
 * (`Fri, 31 Dec 1999 23:59:59 GMT`, or the obsolete RFC 850 and asctime forms, all GMT).
 * Anything else (a negative number, `5s`, an ISO date, a date without its `GMT`) is
 * unreadable and ignored. A header sent more than once arrives as its values joined by
 * commas; it asks for the longest of the values that can be read.
 *
 * @param value - the header value, or null when absent
 * @param nowMs - the current time, to turn a date into a delay
 * @returns the delay in milliseconds (0 for a date in the past), or undefined when absent or
 *   unreadable
 * @example
 * ```ts
 * parseRetryAfter('3', Date.now()) // 3000
 * ```
 */
export function parseRetryAfter(value: string | null, nowMs: number): number | undefined {
  if (value === null) return undefined
  let wait: number | undefined
  let rest = value.trim()
  while (rest !== '') {
    // The RFC allows only integer seconds; a fractional value from a lenient server is still
    // meant as seconds, so it is honoured rather than ignored.
    const member = readMember(rest, nowMs)
    let length: number
    if (member === undefined) {
      // Unreadable: skip to the next member.
      const comma = rest.indexOf(',')
      length = comma === -1 ? rest.length : comma + 1
    } else {
      const ms = member[0]
      if (ms !== undefined && (wait === undefined || ms > wait)) wait = ms
      length = member[1]
    }
    rest = rest.slice(length).trimStart()
  }
  return wait
}

/**
 * Splits a structured-field list on a separator outside double quotes. Inside quotes a
 * backslash escapes the next character (RFC 8941 §3.3.3), so `"a\\"` ends at its last quote.
 */
function splitMembers(value: string, separator: string): string[] {
  const out: string[] = []
  let current = ''
  let quoted = false
  for (let i = 0; i < value.length; i++) {
    const ch = value[i]!
    if (quoted && ch === '\\') {
      current += value.slice(i, i + 2)
      i++
      continue
    }
    if (ch === '"') quoted = !quoted
    if (ch === separator && !quoted) {
      out.push(current.trim())
      current = ''
    } else {
      current += ch
    }
  }
  out.push(current.trim())
  return out.filter((member) => member !== '')
}

/** Reads `key=value` pairs (parameters or dictionary members) into a Map. */
function readPairs(parts: readonly string[]): Map<string, string> {
  const pairs = new Map<string, string>()
  for (const part of parts) {
    const eq = part.indexOf('=')
    if (eq === -1) continue
    pairs.set(part.slice(0, eq).trim().toLowerCase(), part.slice(eq + 1).trim())
  }
  return pairs
}

/**
 * The smallest reset that is read as a Unix time, in seconds: 31.7 years as a delay, which no
 * quota window has, and 2001-09-09 as a Unix time, before any server sending one ran.
 */
const UNIX_TIME_RESET_S = 1_000_000_000

/**
 * A quota reset (`t`, `reset`, `RateLimit-Reset`) in ms from now. The drafts say delay seconds,
 * but servers following the older `X-RateLimit-Reset` habit send the Unix time of the reset
 * (`1700000000`): read as a delay that is 54 years, and the client would give up at once
 * (the ask past any budget) where the server said "come back at 12:00:30". A reset of at least
 * {@link UNIX_TIME_RESET_S} is that time, measured against `nowMs` (0 once it is past).
 */
function resetMs(text: string | undefined, nowMs: number): number | undefined {
  if (text === undefined || !DELTA_SECONDS.test(text)) return undefined
  const s = Number(text)
  return s >= UNIX_TIME_RESET_S ? Math.max(0, s * 1000 - nowMs) : s * 1000
}

// A remaining count: an integer (a negative one, from a server in debt, is none left).
const COUNT = /^-?\d+(?:\.\d+)?$/

/** Whether a remaining count says the quota is used up; false when it is not a number. */
function noneLeft(text: string | undefined): boolean {
  return text !== undefined && COUNT.test(text) && Number(text) <= 0
}

/** The members of a field that may have been sent more than once (joined by commas). */
function members(value: string | null): string[] {
  return value === null ? [] : value.split(',').map((member) => member.trim())
}

/**
 * Parses a `RateLimit` header and returns how long the server asks the client to wait: the
 * longest `t` among the policies whose remaining quota `r` is 0.
 *
 * Understands the IETF draft (08 and later) form `"default";r=0;t=17` (several policies
 * separated by commas) and the older draft-07 dictionary form `limit=100, remaining=0,
 * reset=17`.
 *
 * A reset of 1,000,000,000 seconds or more is read as the Unix time of the reset, not as a
 * delay: servers that send `t=1700000000` mean a moment, not 54 years.
 *
 * @param value - the header value, or null when absent
 * @param nowMs - the current time, to turn a reset sent as a Unix time into a delay
 * @returns the delay in milliseconds, or undefined when no policy is exhausted
 * @example
 * ```ts
 * parseRateLimit('"per-user";r=0;t=17') // 17000
 * parseRateLimit('"per-user";r=5;t=17') // undefined: quota left
 * ```
 */
export function parseRateLimit(
  value: string | null,
  nowMs: number = Date.now(),
): number | undefined {
  if (value === null) return undefined
  const members = splitMembers(value, ',')
  let wait: number | undefined
  // The draft-07 dictionary (`remaining=0, reset=17`) has no `;` parameters.
  const dictionary = readPairs(members)
  if (dictionary.has('remaining') && !value.includes(';')) {
    if (noneLeft(dictionary.get('remaining'))) wait = resetMs(dictionary.get('reset'), nowMs)
    return wait
  }
  for (const member of members) {
    const params = readPairs(splitMembers(member, ';').slice(1))
    if (!noneLeft(params.get('r'))) continue
    const t = resetMs(params.get('t'), nowMs)
    if (t !== undefined && (wait === undefined || t > wait)) wait = t
  }
  return wait
}

/**
 * How long the server asked the client to wait before trying again: the longest of
 * `Retry-After`, the `RateLimit` header (when a policy has no quota left) and the draft-06
 * pair `RateLimit-Remaining: 0` + `RateLimit-Reset`. A reset of 1,000,000,000 seconds or more
 * is the Unix time of the reset (measured against `nowMs`). Unreadable values ask for nothing; a
 * header sent more than once (its values joined by commas) asks for its longest value.
 *
 * @param headers - the response headers
 * @param nowMs - the current time, for a `Retry-After` date
 * @returns the delay in milliseconds, or undefined when the server asked for nothing
 */
export function serverWaitMs(headers: HeaderReader, nowMs: number): number | undefined {
  const asks = [
    parseRetryAfter(headers.get('retry-after'), nowMs),
    parseRateLimit(headers.get('ratelimit'), nowMs),
  ]
  // Sent more than once, the pair arrives joined by commas: any count of none left, and the
  // longest reset, is the ask.
  if (members(headers.get('ratelimit-remaining')).some(noneLeft)) {
    asks.push(...members(headers.get('ratelimit-reset')).map((reset) => resetMs(reset, nowMs)))
  }
  let wait: number | undefined
  for (const ask of asks) if (ask !== undefined && (wait === undefined || ask > wait)) wait = ask
  return wait
}
