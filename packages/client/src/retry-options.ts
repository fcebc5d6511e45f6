import { createAdaptiveThrottle } from './adaptive-throttle.js'
import type { AdaptiveThrottle, AdaptiveThrottleOptions } from './adaptive-throttle.js'
import { DEFAULT_BASE_MS, DEFAULT_CAP_MS } from './backoff.js'
import type { Jitter } from './backoff.js'
import {
  checkBoolean,
  checkCount,
  checkFunction,
  checkKnownKeys,
  checkNonNegative,
  checkObject,
  checkOneOf,
  checkSignal,
  checkStatuses,
} from './option-checks.js'
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
   * Retry transient network errors (connection refused, reset or timed out, DNS failure) of
   * retryable methods. Other thrown errors (an invalid URL, an unsupported protocol, a header
   * or body fetch refuses, an abort) fail at once with the original error.
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
  /**
   * Called before each wait; use it to log or count retries. If it throws, the call rejects
   * with its error (the refused response's body is cancelled all the same).
   */
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

export interface ResolvedOptions {
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

/**
 * The names of {@link RetryOptions} (a record, so the compiler checks none is missing): a
 * misspelt one would otherwise leave its default in force without a word.
 */
const KNOWN = Object.keys({
  maxAttempts: true,
  baseMs: true,
  capMs: true,
  maxTotalMs: true,
  retryOn: true,
  retryNonIdempotent: true,
  retryNetworkErrors: true,
  jitter: true,
  random: true,
  sleep: true,
  clock: true,
  onRetry: true,
  signal: true,
  adaptiveThrottle: true,
} satisfies Record<keyof RetryOptions, true>)

/**
 * Checks every option when the wrapper is created: an unknown name or a value of the wrong type
 * is a TypeError, a number or name out of range a RangeError, each naming the option.
 */
export function resolveOptions(options: RetryOptions): ResolvedOptions {
  checkObject('options', options)
  checkKnownKeys('withRetry', options, KNOWN)
  const random = checkFunction('random', options.random, Math.random)
  const clock = checkFunction('clock', options.clock, Date.now)
  return {
    baseMs: checkNonNegative('baseMs', options.baseMs, DEFAULT_BASE_MS),
    capMs: checkNonNegative('capMs', options.capMs, DEFAULT_CAP_MS),
    maxAttempts: checkCount('maxAttempts', options.maxAttempts, 5),
    maxTotalMs: checkNonNegative('maxTotalMs', options.maxTotalMs, 60_000),
    retryOn: new Set(checkStatuses('retryOn', options.retryOn, [429, 503])),
    retryNonIdempotent: checkBoolean('retryNonIdempotent', options.retryNonIdempotent, false),
    retryNetworkErrors: checkBoolean('retryNetworkErrors', options.retryNetworkErrors, true),
    jitter: checkOneOf<Jitter>('jitter', options.jitter, 'full', ['full', 'none']),
    random,
    sleep: checkFunction<Sleep>('sleep', options.sleep, defaultSleep),
    clock,
    onRetry: checkFunction<RetryOptions['onRetry']>('onRetry', options.onRetry, undefined),
    signal: checkSignal('signal', options.signal),
    throttle: resolveThrottle(options.adaptiveThrottle, clock, random),
  }
}
