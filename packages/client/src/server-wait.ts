/** A header bag: the WHATWG `Headers` of a fetch `Response` fits. */
export interface HeaderReader {
  get(name: string): string | null
}

const DELTA_SECONDS = /^\d+(?:\.\d+)?$/

/**
 * Parses a `Retry-After` value (RFC 9110 §10.2.3): delay seconds (`120`) or an HTTP date
 * (`Fri, 31 Dec 1999 23:59:59 GMT`).
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
  const text = value.trim()
  if (text === '') return undefined
  // The RFC allows only integers; a fractional value from a lenient server is still meant
  // as seconds, so honour it rather than ignore the server.
  if (DELTA_SECONDS.test(text)) return Number(text) * 1000
  // Date.parse accepts IMF-fixdate, RFC 850 and asctime, the three forms RFC 9110 names,
  // but also bare numbers (`-1` is year -1); every HTTP date names its month in letters.
  if (!/[a-z]/i.test(text)) return undefined
  const dateMs = Date.parse(text)
  if (Number.isNaN(dateMs)) return undefined
  return Math.max(0, dateMs - nowMs)
}

/** Splits a structured-field list on commas outside double quotes. */
function splitMembers(value: string, separator: string): string[] {
  const out: string[] = []
  let current = ''
  let quoted = false
  for (let i = 0; i < value.length; i++) {
    const ch = value[i]!
    if (ch === '"' && value[i - 1] !== '\\') quoted = !quoted
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

function seconds(text: string | undefined): number | undefined {
  if (text === undefined || !DELTA_SECONDS.test(text)) return undefined
  return Number(text) * 1000
}

/**
 * Parses a `RateLimit` header and returns how long the server asks the client to wait: the
 * longest `t` among the policies whose remaining quota `r` is 0.
 *
 * Understands the IETF draft (08 and later) form `"default";r=0;t=17` (several policies
 * separated by commas) and the older draft-07 dictionary form `limit=100, remaining=0,
 * reset=17`.
 *
 * @param value - the header value, or null when absent
 * @returns the delay in milliseconds, or undefined when no policy is exhausted
 * @example
 * ```ts
 * parseRateLimit('"per-user";r=0;t=17') // 17000
 * parseRateLimit('"per-user";r=5;t=17') // undefined: quota left
 * ```
 */
export function parseRateLimit(value: string | null): number | undefined {
  if (value === null) return undefined
  const members = splitMembers(value, ',')
  let wait: number | undefined
  // The draft-07 dictionary (`remaining=0, reset=17`) has no `;` parameters.
  const dictionary = readPairs(members)
  if (dictionary.has('remaining') && !value.includes(';')) {
    if (Number(dictionary.get('remaining')) <= 0) wait = seconds(dictionary.get('reset'))
    return wait
  }
  for (const member of members) {
    const params = readPairs(splitMembers(member, ';').slice(1))
    const remaining = params.get('r')
    if (remaining === undefined || Number(remaining) > 0) continue
    const t = seconds(params.get('t'))
    if (t !== undefined && (wait === undefined || t > wait)) wait = t
  }
  return wait
}

/**
 * How long the server asked the client to wait before trying again: the longest of
 * `Retry-After`, the `RateLimit` header (when a policy has no quota left) and the draft-06
 * pair `RateLimit-Remaining: 0` + `RateLimit-Reset`.
 *
 * @param headers - the response headers
 * @param nowMs - the current time, for a `Retry-After` date
 * @returns the delay in milliseconds, or undefined when the server asked for nothing
 */
export function serverWaitMs(headers: HeaderReader, nowMs: number): number | undefined {
  const asks = [
    parseRetryAfter(headers.get('retry-after'), nowMs),
    parseRateLimit(headers.get('ratelimit')),
  ]
  const remaining = headers.get('ratelimit-remaining')
  if (remaining !== null && Number(remaining.trim()) <= 0) {
    asks.push(seconds(headers.get('ratelimit-reset')?.trim()))
  }
  let wait: number | undefined
  for (const ask of asks) if (ask !== undefined && (wait === undefined || ask > wait)) wait = ask
  return wait
}
