/**
 * Codes of failures of the connection, not of the request, so that another attempt may pass:
 * Node's system errors and undici's socket and timeout errors. undici's fetch throws
 * `TypeError('fetch failed')` with the failure as its `cause`; `node:http` and fetches built on
 * it put the code on the error itself ("socket hang up" is ECONNRESET).
 */
const TRANSIENT_CODES: ReadonlySet<string> = new Set([
  'ECONNRESET',
  'ECONNREFUSED',
  'ECONNABORTED',
  'EPIPE',
  'ETIMEDOUT',
  'ENETUNREACH',
  'ENETDOWN',
  'ENETRESET',
  'EHOSTUNREACH',
  'EHOSTDOWN',
  'EAI_AGAIN',
  // DNS found no address: often a typo, but also a resolver that failed for a moment.
  'ENOTFOUND',
  'UND_ERR_SOCKET',
  'UND_ERR_CLOSED',
  'UND_ERR_CONNECT_TIMEOUT',
  'UND_ERR_HEADERS_TIMEOUT',
  'UND_ERR_BODY_TIMEOUT',
])

/**
 * What a network failure says when it carries no cause: undici's message, and the browsers'
 * (which hide the cause): Chromium, Firefox, WebKit.
 */
const CAUSELESS_MESSAGES: ReadonlySet<string> = new Set([
  'fetch failed',
  'Failed to fetch',
  'NetworkError when attempting to fetch resource.',
  'Load failed',
])

// undici nests one cause, an AggregateError one more (its `errors`): a few levels suffice.
const MAX_DEPTH = 4

function transientAt(err: unknown, depth: number): boolean {
  if (typeof err !== 'object' || err === null || depth > MAX_DEPTH) return false
  const { code, errors } = err as { code?: unknown; errors?: unknown }
  if (typeof code === 'string' && TRANSIENT_CODES.has(code)) return true
  if (Array.isArray(errors) && errors.some((e) => transientAt(e, depth + 1))) return true
  return 'cause' in err && transientAt(err.cause, depth + 1)
}

/**
 * Whether a thrown fetch error is a transient network failure (a connection refused, reset or
 * timed out, a DNS failure), which another attempt may get past. Anything else — an invalid
 * URL, an unsupported protocol, a header or body fetch refuses, an abort — fails the same way
 * every time, so it is not retried.
 *
 * @param err - what fetch rejected with
 * @returns true when a retry may succeed
 */
export function isTransientNetworkError(err: unknown): boolean {
  // A fetch may throw anything: a revoked Proxy, an object whose `code` or `cause` getter
  // throws. Such a value cannot be read, so it is not transient, and reading it must not
  // replace it with an error of its own: the caller rethrows the value the fetch threw.
  try {
    if (transientAt(err, 0)) return true
    // No cause to read: only the bare network-failure messages of undici and the browsers.
    return (
      err instanceof TypeError && err.cause === undefined && CAUSELESS_MESSAGES.has(err.message)
    )
  } catch {
    return false
  }
}
