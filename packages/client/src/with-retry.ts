import { LocallyRefusedResponse, THROTTLED_STATUSES } from './adaptive-throttle.js'
import type { AdaptiveThrottle } from './adaptive-throttle.js'
import { backoffDelayMs } from './backoff.js'
import { isTransientNetworkError } from './network-errors.js'
import {
  resolveOptions,
  type FetchInput,
  type FetchLike,
  type ResolvedOptions,
  type RetryOptions,
} from './retry-options.js'
import { serverWaitMs } from './server-wait.js'
import type { Sleep } from './sleep.js'

export type { FetchInput, FetchLike, RetryEvent, RetryOptions } from './retry-options.js'

/** Methods that may be sent twice with the effect of once (RFC 9110 §9.2.2). */
const IDEMPOTENT = new Set(['GET', 'HEAD', 'OPTIONS', 'TRACE', 'PUT', 'DELETE'])

/**
 * A body that cannot be sent twice: a stream is consumed by the first attempt. Strings,
 * buffers, Blobs, URLSearchParams and FormData are replayable.
 */
function isStreamingBody(body: unknown): boolean {
  if (body === null || body === undefined || typeof body !== 'object') return false
  if (typeof ReadableStream !== 'undefined' && body instanceof ReadableStream) return true
  return Symbol.asyncIterator in body
}

function combineSignals(
  signals: readonly (AbortSignal | null | undefined)[],
): AbortSignal | undefined {
  const present = signals.filter((s): s is AbortSignal => s !== undefined && s !== null)
  if (present.length <= 1) return present[0]
  if (typeof AbortSignal.any === 'function') return AbortSignal.any(present)
  // Node 20.0-20.2 lack AbortSignal.any: follow the first signal that aborts.
  const controller = new AbortController()
  for (const s of present) {
    if (s.aborted) {
      controller.abort(s.reason)
      break
    }
    s.addEventListener('abort', () => controller.abort(s.reason), { once: true })
  }
  return controller.signal
}

function isAbortError(error: unknown): boolean {
  // A value that cannot be read (a revoked Proxy, a throwing `name` getter) is no abort, and
  // the caller rethrows it as the fetch threw it.
  try {
    return error instanceof Error && (error.name === 'AbortError' || error.name === 'TimeoutError')
  } catch {
    return false
  }
}

/** Waits, and rejects as soon as the signal aborts even if an injected sleep ignores it. */
function waitFor(ms: number, sleep: Sleep, signal: AbortSignal | undefined): Promise<void> {
  if (signal === undefined) return sleep(ms)
  if (signal.aborted) return Promise.reject(signal.reason as Error)
  return new Promise<void>((resolve, reject) => {
    const onAbort = (): void => reject(signal.reason as Error)
    signal.addEventListener('abort', onAbort, { once: true })
    sleep(ms, signal).then(
      () => {
        signal.removeEventListener('abort', onAbort)
        resolve()
      },
      (error: Error) => {
        signal.removeEventListener('abort', onAbort)
        reject(error)
      },
    )
  })
}

/**
 * Whether a fetch's answer can be read as a response: a status and headers. Not `instanceof
 * Response`, since undici's own fetch (the npm package) answers with its own Response class.
 */
function isResponse(value: unknown): value is Response {
  if (typeof value !== 'object' || value === null) return false
  const { status, headers } = value as { status?: unknown; headers?: { get?: unknown } }
  return (
    Number.isInteger(status) &&
    typeof headers === 'object' &&
    headers !== null &&
    typeof headers.get === 'function'
  )
}

/** What a fetch answered instead of a response, for the error (never its contents). */
function describeAnswer(value: unknown): string {
  if (value === null || value === undefined) return String(value)
  if (Array.isArray(value)) return 'an array'
  if (typeof value === 'object') return 'an object without a status and headers'
  return `a ${typeof value}`
}

async function discardBody(response: Response): Promise<void> {
  // An unread body keeps its connection busy until garbage collection; free it now.
  try {
    await response.body?.cancel()
  } catch {
    // Already consumed or errored: nothing to free.
  }
}

/**
 * One attempt through the adaptive throttle, when there is one: counted as a request, refused
 * locally or sent, and counted as accepted when the server answers neither 429 nor 503. A
 * network error or an abort counts as a request the server did not accept.
 *
 * An abort of the call, before or during the attempt, rejects with the signal's reason,
 * whatever the fetch did with it: a fetch that ignores its signal may still answer, or fail
 * with a network error or an abort error of its own.
 */
async function sendAttempt(
  fetchImpl: FetchLike,
  throttle: AdaptiveThrottle | undefined,
  input: () => FetchInput,
  init: RequestInit | undefined,
  signal: AbortSignal | undefined,
): Promise<Response> {
  if (signal?.aborted) throw signal.reason
  if (throttle !== undefined && !throttle.admit()) return new LocallyRefusedResponse()
  let response: Response
  try {
    response = await fetchImpl(input(), init)
  } catch (error) {
    if (signal?.aborted) throw signal.reason
    throw error
  }
  if (!isResponse(response)) {
    // A wrapper that forgot to return, a test double that answers a plain object: without a
    // status the answer cannot be read as an acceptance or a refusal, and is not a network
    // failure either, so it is not sent again; it fails now, saying what came back.
    throw new TypeError(`fetch resolved to ${describeAnswer(response)}, expected a Response`)
  }
  if (throttle !== undefined && !THROTTLED_STATUSES.has(response.status)) throttle.accepted()
  if (signal?.aborted) {
    void discardBody(response)
    throw signal.reason
  }
  return response
}

async function fetchWithRetries(
  fetchImpl: FetchLike,
  o: ResolvedOptions,
  input: FetchInput,
  init: RequestInit | undefined,
): Promise<Response> {
  const request = typeof Request !== 'undefined' && input instanceof Request ? input : undefined
  const method = (init?.method ?? request?.method ?? 'GET').toUpperCase()
  const url = typeof input === 'string' ? input : 'href' in input ? input.href : input.url
  const signal = combineSignals([o.signal, init?.signal, request?.signal])
  // Each attempt gets the combined signal: fetch(request, { signal }) follows init's signal
  // alone, so passing init as is would leave the Request's own signal unheard in flight.
  const callInit: RequestInit | undefined =
    signal === undefined || signal === init?.signal ? init : { ...init, signal }

  const retryable =
    (IDEMPOTENT.has(method) || o.retryNonIdempotent) &&
    o.maxAttempts > 1 &&
    !isStreamingBody(init?.body) &&
    // A Request whose body was read already cannot be cloned, let alone resent.
    !(request?.bodyUsed ?? false)
  if (!retryable) return sendAttempt(fetchImpl, o.throttle, () => input, callInit, signal)

  // A Request with a body is cloned for every attempt: the original stays unread, so each
  // attempt gets a fresh copy (clone tees the stream, buffering it for the retries).
  const nextInput = (): FetchInput => (request?.body ? request.clone() : input)
  const started = o.clock()
  // The waits so far: the budget counts at least them, so a wall clock stepped back (an NTP
  // correction, a test's clock) cannot hand out the same budget twice.
  let waited = 0

  for (let attempt = 1; ; attempt++) {
    let response: Response | undefined
    let error: unknown
    try {
      response = await sendAttempt(fetchImpl, o.throttle, nextInput, callInit, signal)
    } catch (err) {
      // Only a failure of the connection may pass next time: an invalid URL, an unsupported
      // protocol or a request fetch refuses would fail again, so it fails now.
      if (signal?.aborted || isAbortError(err) || !o.retryNetworkErrors) throw err
      if (!isTransientNetworkError(err)) throw err
      error = err
    }
    if (response !== undefined && !o.retryOn.has(response.status)) return response

    const giveUp = (): Response => {
      if (response !== undefined) return response
      throw error
    }
    if (attempt >= o.maxAttempts) return giveUp()

    const now = o.clock()
    const left = o.maxTotalMs - Math.max(now - started, waited)
    const asked = response === undefined ? undefined : serverWaitMs(response.headers, now)
    // Waiting less than the server asked only earns another refusal; if its ask does not fit
    // in the budget, hand the caller the refusal now instead of failing later. An ask past
    // what a double holds (Retry-After of 400 digits) never ends, even with no budget bound.
    if (left <= 0 || (asked !== undefined && (asked > left || asked === Infinity))) {
      return giveUp()
    }
    const backoffMs = backoffDelayMs(attempt - 1, o)
    const delayMs = Math.max(asked ?? 0, Math.min(backoffMs, left))

    try {
      o.onRetry?.({
        attempt,
        delayMs,
        backoffMs,
        serverWaitMs: asked,
        response,
        error,
        refusedLocally: response instanceof LocallyRefusedResponse,
        method,
        url,
      })
    } finally {
      // Freed even when the hook throws; not awaited, so an abort is heard during the wait
      // however long a stream takes to cancel.
      if (response !== undefined) void discardBody(response)
    }
    waited += delayMs
    await waitFor(delayMs, o.sleep, signal)
  }
}

/**
 * Wraps a fetch function so that refused requests (429 and 503 by default) and network
 * errors are retried with exponential backoff and full jitter, honouring the server's
 * `Retry-After` and `RateLimit` headers: the wait is `max(server ask, random(0, min(capMs,
 * baseMs · 2^retry)))`, and no wait ends past `maxTotalMs`.
 *
 * Non-idempotent methods (POST, PATCH) are sent once unless `retryNonIdempotent` is set.
 * Streaming bodies (a `ReadableStream` or async iterable in `init.body`) are never retried,
 * since the first attempt consumes them; a `Request` with a body is cloned per attempt.
 *
 * @param fetchImpl - the fetch to wrap (the global `fetch`, undici's, a test double)
 * @param options - backoff, budget and hooks; see {@link RetryOptions}
 * @returns a function with the signature of `fetch`
 * @example
 * ```ts
 * import { withRetry } from '@floodgate/client'
 *
 * const fetchRetrying = withRetry(fetch, { maxAttempts: 4, capMs: 2000 })
 * const res = await fetchRetrying('https://api.example.com/items')
 * ```
 */
export function withRetry(fetchImpl: FetchLike, options: RetryOptions = {}): FetchLike {
  const resolved = resolveOptions(options)
  return function fetchRetrying(input: FetchInput, init?: RequestInit): Promise<Response> {
    return fetchWithRetries(fetchImpl, resolved, input, init)
  }
}

/**
 * The global `fetch` with retries: {@link withRetry} for a single call.
 *
 * @param input - URL or Request, as for `fetch`
 * @param init - request options, as for `fetch`
 * @param options - retry options; see {@link RetryOptions}
 * @returns the first response that is not retried, or the last refused one when the
 *   attempts or the time budget run out
 * @example
 * ```ts
 * import { fetchWithRetry } from '@floodgate/client'
 *
 * const res = await fetchWithRetry('http://127.0.0.1:3000/report', undefined, { maxTotalMs: 5000 })
 * ```
 */
export function fetchWithRetry(
  input: FetchInput,
  init?: RequestInit,
  options?: RetryOptions,
): Promise<Response> {
  return withRetry((i, n) => fetch(i, n), options)(input, init)
}
