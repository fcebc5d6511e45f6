import {
  createAdaptiveThrottle,
  LocallyRefusedResponse,
  THROTTLED_STATUSES,
} from './adaptive-throttle.js'
import type { AdaptiveThrottle, AdaptiveThrottleOptions } from './adaptive-throttle.js'
import { backoffDelayMs, DEFAULT_BASE_MS, DEFAULT_CAP_MS } from './backoff.js'
import type { Jitter } from './backoff.js'
import { serverWaitMs } from './server-wait.js'
import { sleep as defaultSleep } from './sleep.js'
import type { Sleep } from './sleep.js'

/** What a fetch function accepts as its first argument. */
export type FetchInput = string | URL | Request

/** A function with the signature of the global `fetch`. */
export type FetchLike = (input: FetchInput, init?: RequestInit) => Promise<Response>

/** Passed to {@link RetryOptions.onRetry} before each wait. */
export interface RetryEvent {
  /** The attempt that just failed, counting from 1. */
  readonly attempt: number
  /** How long the client will wait before the next attempt. */
  readonly delayMs: number
  /** The jittered exponential backoff part of the delay. */
  readonly backoffMs: number
  /** What the server asked for (`Retry-After`, `RateLimit`), if anything. */
  readonly serverWaitMs: number | undefined
  /** The refused response (its body is discarded after this hook returns). */
  readonly response: Response | undefined
  /** The network error, when the attempt threw instead of answering. */
  readonly error: unknown
  /**
   * `true` when the attempt was refused by the client's adaptive throttle before it was sent
   * (`response` is then a {@link LocallyRefusedResponse}).
   */
  readonly refusedLocally: boolean
  readonly method: string
  readonly url: string
}

/** Options of {@link withRetry} and {@link fetchWithRetry}. */
export interface RetryOptions {
  /**
   * Ceiling of the first retry's backoff, doubled for each further retry.
   * @default 100
   */
  readonly baseMs?: number | undefined
  /**
   * Largest backoff ceiling. A server's `Retry-After` may ask for more, and is honoured.
   * @default 10_000
   */
  readonly capMs?: number | undefined
  /**
   * Attempts in all, the first one included (1 disables retries).
   * @default 5
   */
  readonly maxAttempts?: number | undefined
  /**
   * Time budget from the first attempt: no wait ends past it. When the server asks for a
   * longer wait than is left, the client gives up and returns the refused response.
   * @default 60_000
   */
  readonly maxTotalMs?: number | undefined
  /**
   * Response statuses that are retried.
   * @default [429, 503]
   */
  readonly retryOn?: readonly number[] | undefined
  /**
   * Retry POST, PATCH and other non-idempotent methods too. Only safe when the server
   * de-duplicates (an idempotency key) or refused the request before doing any work — which
   * a 429 from a rate limiter does.
   * @default false
   */
  readonly retryNonIdempotent?: boolean | undefined
  /**
   * Retry network errors (connection refused or reset, DNS failure) of retryable methods.
   * @default true
   */
  readonly retryNetworkErrors?: boolean | undefined
  /**
   * How the backoff is spread under its ceiling; `'none'` is for demonstrations only.
   * @default 'full'
   */
  readonly jitter?: Jitter | undefined
  /**
   * Uniform numbers in `[0, 1)`.
   * @default Math.random
   */
  readonly random?: (() => number) | undefined
  /**
   * Waits between attempts; inject one in tests so nothing really sleeps.
   * @default a cancellable `setTimeout`
   */
  readonly sleep?: Sleep | undefined
  /**
   * Current time in milliseconds, for the budget and `Retry-After` dates.
   * @default Date.now
   */
  readonly clock?: (() => number) | undefined
  /** Called before each wait; use it to log or count retries. */
  readonly onRetry?: ((event: RetryEvent) => void) | undefined
  /**
   * Cancels the current attempt and any wait. Combined with `init.signal` when both are set.
   */
  readonly signal?: AbortSignal | undefined
  /**
   * Client-side adaptive throttling (Google SRE book, "Handling Overload"): while the server
   * refuses much of what it is sent (429 or 503), refuse a share of the attempts locally,
   * before sending them, with probability `max(0, (requests - k · accepts) / (requests + 1))`
   * over the last `windowMs`. A refused attempt is answered with a
   * {@link LocallyRefusedResponse} (a 429 whose `refusedLocally` is `true`) and retried like
   * a server's 429. `true` uses `k: 2` and a 2-minute window; an object sets them; an
   * {@link AdaptiveThrottle} from {@link createAdaptiveThrottle} is shared as is. Created from
   * options, the throttle uses this wrapper's `clock` and `random`. {@link fetchWithRetry}
   * builds a wrapper per call, so there only a shared throttle learns anything.
   * @default false
   */
  readonly adaptiveThrottle?:
    boolean | Omit<AdaptiveThrottleOptions, 'clock' | 'random'> | AdaptiveThrottle | undefined
}

interface ResolvedOptions {
  readonly baseMs: number
  readonly capMs: number
  readonly maxAttempts: number
  readonly maxTotalMs: number
  readonly retryOn: ReadonlySet<number>
  readonly retryNonIdempotent: boolean
  readonly retryNetworkErrors: boolean
  readonly jitter: Jitter
  readonly random: () => number
  readonly sleep: Sleep
  readonly clock: () => number
  readonly onRetry: ((event: RetryEvent) => void) | undefined
  readonly signal: AbortSignal | undefined
  readonly throttle: AdaptiveThrottle | undefined
}

/** Methods that may be sent twice with the effect of once (RFC 9110 §9.2.2). */
const IDEMPOTENT = new Set(['GET', 'HEAD', 'OPTIONS', 'TRACE', 'PUT', 'DELETE'])

function nonNegative(name: string, value: number | undefined, fallback: number): number {
  if (value === undefined) return fallback
  if (typeof value !== 'number' || Number.isNaN(value) || value < 0) {
    throw new RangeError(`${name}: expected a number >= 0, got ${String(value)}`)
  }
  return value
}

function isThrottle(value: object): value is AdaptiveThrottle {
  const t = value as Partial<AdaptiveThrottle>
  return typeof t.admit === 'function' && typeof t.accepted === 'function'
}

function resolveThrottle(
  option: RetryOptions['adaptiveThrottle'],
  clock: () => number,
  random: () => number,
): AdaptiveThrottle | undefined {
  if (option === undefined || option === false) return undefined
  if (option === true) return createAdaptiveThrottle({ clock, random })
  if (typeof option !== 'object' || option === null || Array.isArray(option)) {
    throw new TypeError(
      `adaptiveThrottle: expected a boolean, an object or a throttle, got ${option === null ? 'null' : typeof option}`,
    )
  }
  if (isThrottle(option)) return option
  return createAdaptiveThrottle({ clock, random, ...option })
}

function resolveOptions(options: RetryOptions): ResolvedOptions {
  const maxAttempts = nonNegative('maxAttempts', options.maxAttempts, 5)
  if (!Number.isInteger(maxAttempts) || maxAttempts < 1) {
    throw new RangeError(`maxAttempts: expected an integer >= 1, got ${String(maxAttempts)}`)
  }
  const jitter = options.jitter ?? 'full'
  if (jitter !== 'full' && jitter !== 'none') {
    throw new RangeError(`jitter: expected 'full' or 'none', got ${String(jitter)}`)
  }
  const random = options.random ?? Math.random
  const clock = options.clock ?? Date.now
  return {
    baseMs: nonNegative('baseMs', options.baseMs, DEFAULT_BASE_MS),
    capMs: nonNegative('capMs', options.capMs, DEFAULT_CAP_MS),
    maxAttempts,
    maxTotalMs: nonNegative('maxTotalMs', options.maxTotalMs, 60_000),
    retryOn: new Set(options.retryOn ?? [429, 503]),
    retryNonIdempotent: options.retryNonIdempotent ?? false,
    retryNetworkErrors: options.retryNetworkErrors ?? true,
    jitter,
    random,
    sleep: options.sleep ?? defaultSleep,
    clock,
    onRetry: options.onRetry,
    signal: options.signal,
    throttle: resolveThrottle(options.adaptiveThrottle, clock, random),
  }
}

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
  return error instanceof Error && (error.name === 'AbortError' || error.name === 'TimeoutError')
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
 */
async function sendAttempt(
  fetchImpl: FetchLike,
  throttle: AdaptiveThrottle | undefined,
  input: () => FetchInput,
  init: RequestInit | undefined,
  signal: AbortSignal | undefined,
): Promise<Response> {
  if (throttle === undefined) return fetchImpl(input(), init)
  // An aborted call rejects with its reason, as fetch would, rather than count as a request.
  if (signal?.aborted) throw signal.reason
  if (!throttle.admit()) return new LocallyRefusedResponse()
  const response = await fetchImpl(input(), init)
  if (!THROTTLED_STATUSES.has(response.status)) throttle.accepted()
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
  const callInit: RequestInit | undefined =
    o.signal === undefined ? init : { ...init, signal: signal ?? null }

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

  for (let attempt = 1; ; attempt++) {
    let response: Response | undefined
    let error: unknown
    try {
      response = await sendAttempt(fetchImpl, o.throttle, nextInput, callInit, signal)
    } catch (err) {
      if (signal?.aborted || isAbortError(err) || !o.retryNetworkErrors) throw err
      error = err
    }
    if (response !== undefined && !o.retryOn.has(response.status)) return response

    const giveUp = (): Response => {
      if (response !== undefined) return response
      throw error
    }
    if (attempt >= o.maxAttempts) return giveUp()

    const now = o.clock()
    const left = o.maxTotalMs - (now - started)
    const asked = response === undefined ? undefined : serverWaitMs(response.headers, now)
    // Waiting less than the server asked only earns another refusal; if its ask does not fit
    // in the budget, hand the caller the refusal now instead of failing later.
    if (left <= 0 || (asked !== undefined && asked > left)) return giveUp()
    const backoffMs = backoffDelayMs(attempt - 1, o)
    const delayMs = Math.max(asked ?? 0, Math.min(backoffMs, left))

    const refusedLocally = response instanceof LocallyRefusedResponse
    o.onRetry?.({
      attempt,
      delayMs,
      backoffMs,
      serverWaitMs: asked,
      response,
      error,
      refusedLocally,
      method,
      url,
    })
    if (response !== undefined) await discardBody(response)
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
