import { checkFunction, checkKnownKeys, checkNumberAbove, checkObject } from './option-checks.js'

/** Options of {@link createAdaptiveThrottle}. */
export interface AdaptiveThrottleOptions {
  /**
   * How many requests the client may send per request the server accepts before it starts
   * refusing locally. Lower is more aggressive: 1 refuses as soon as anything is refused; 2
   * lets the server see about twice what it accepts, so it learns quickly when it recovers.
   * @default 2
   */
  readonly k?: number | undefined
  /**
   * How far back the counts reach, in milliseconds. The window moves in 60 steps, so a count
   * is forgotten between `windowMs · 59/60` and `windowMs` after it was made.
   * @default 120_000
   */
  readonly windowMs?: number | undefined
  /**
   * Current time in milliseconds. A clock that goes backwards is treated as standing still.
   * @default Date.now
   */
  readonly clock?: (() => number) | undefined
  /**
   * Uniform numbers in `[0, 1)`, drawn once per request while the refusal probability is
   * above 0.
   * @default Math.random
   */
  readonly random?: (() => number) | undefined
}

/** What an {@link AdaptiveThrottle} has counted over its window. */
export interface AdaptiveThrottleCounts {
  /** Requests asked for in the window, those refused locally included. */
  readonly requests: number
  /** Requests the server accepted (answered with neither 429 nor 503) in the window. */
  readonly accepts: number
  /** The probability that the next request is refused locally. */
  readonly refusalProbability: number
}

/**
 * Client-side adaptive throttling: the client counts, over a recent window, the requests it
 * wanted to send and the ones the server accepted, and refuses a request itself, before
 * sending it, with probability `max(0, (requests - k · accepts) / (requests + 1))`.
 * Share one throttle between the wrappers that call the same backend.
 */
export interface AdaptiveThrottle {
  /**
   * Counts one request and decides whether it may be sent.
   *
   * @returns `true` to send it; `false` when it is refused locally
   */
  admit(): boolean
  /** Counts an accepted request: call it when a sent request was not answered 429 or 503. */
  accepted(): void
  /** The counts over the window and the current refusal probability. */
  counts(): AdaptiveThrottleCounts
  /** The multiplier in force: the server sees about `k` times what it accepts. */
  readonly k: number
  /** How far back the counts reach, in milliseconds. */
  readonly windowMs: number
}

/** Default `k` of {@link createAdaptiveThrottle}: the server sees about twice what it accepts. */
export const DEFAULT_THROTTLE_K = 2
/** Default window of {@link createAdaptiveThrottle}: two minutes. */
export const DEFAULT_THROTTLE_WINDOW_MS = 120_000

// The window slides in this many steps: finer steps forget more precisely but cost a longer
// sum per request; 60 keeps the sum short and a 2-minute window's step at 2 s.
const BUCKETS = 60

/**
 * The probability of refusing a request locally, `max(0, (requests - k · accepts) /
 * (requests + 1))`: 0 while the server accepts at least one request in `k`, and approaching
 * (never reaching) 1 as refusals pile up.
 *
 * @param requests - requests counted over the window, local refusals included
 * @param accepts - requests the server accepted over the window
 * @param k - the multiplier
 * @returns a probability in `[0, 1)`
 */
export function refusalProbability(requests: number, accepts: number, k: number): number {
  return Math.max(0, (requests - k * accepts) / (requests + 1))
}

const KNOWN = ['k', 'windowMs', 'clock', 'random']

/**
 * Creates an {@link AdaptiveThrottle}, the client-side throttling of Google's SRE book
 * ("Handling Overload"): when a server refuses much of what it is sent, the clients
 * themselves drop the excess before it reaches the network, so the server spends its time on
 * requests it can serve rather than on refusing the rest. It converges on the server seeing
 * about `k` times what it accepts.
 *
 * {@link withRetry}'s `adaptiveThrottle` option creates one per wrapper; create one yourself
 * to share it between wrappers, or to throttle another kind of client.
 *
 * @param options - `k`, `windowMs` and the injected clock and random source
 * @returns a throttle, counting from zero
 * @throws RangeError or TypeError naming the option, for a bad value
 * @example
 * ```ts
 * const throttle = createAdaptiveThrottle({ k: 2 })
 * if (!throttle.admit()) throw new Error('refused locally')
 * const res = await fetch(url)
 * if (res.status !== 429 && res.status !== 503) throttle.accepted()
 * ```
 */
export function createAdaptiveThrottle(options: AdaptiveThrottleOptions = {}): AdaptiveThrottle {
  checkObject('adaptiveThrottle', options)
  checkKnownKeys('adaptiveThrottle', options, KNOWN)
  const k = checkNumberAbove('adaptiveThrottle.k', options.k, DEFAULT_THROTTLE_K, 1, true)
  const windowMs = checkNumberAbove(
    'adaptiveThrottle.windowMs',
    options.windowMs,
    DEFAULT_THROTTLE_WINDOW_MS,
  )
  const clock = checkFunction<() => number>('adaptiveThrottle.clock', options.clock, Date.now)
  const random = checkFunction<() => number>('adaptiveThrottle.random', options.random, Math.random)

  const bucketMs = windowMs / BUCKETS
  const ids = new Array<number>(BUCKETS).fill(Number.NEGATIVE_INFINITY)
  const requests = new Array<number>(BUCKETS).fill(0)
  const accepts = new Array<number>(BUCKETS).fill(0)
  let latest = Number.NEGATIVE_INFINITY

  /** The slot of the current step, emptied if it last held a step that has left the window. */
  function currentSlot(): number {
    latest = Math.max(latest, Math.floor(clock() / bucketMs))
    const slot = ((latest % BUCKETS) + BUCKETS) % BUCKETS
    if (ids[slot] !== latest) {
      ids[slot] = latest
      requests[slot] = 0
      accepts[slot] = 0
    }
    return slot
  }

  function totals(): { requests: number; accepts: number } {
    currentSlot()
    let r = 0
    let a = 0
    for (let i = 0; i < BUCKETS; i++) {
      if (ids[i]! > latest - BUCKETS) {
        r += requests[i]!
        a += accepts[i]!
      }
    }
    return { requests: r, accepts: a }
  }

  return {
    k,
    windowMs,
    admit(): boolean {
      const t = totals()
      const p = refusalProbability(t.requests, t.accepts, k)
      requests[currentSlot()]!++
      return !(p > 0 && random() < p)
    },
    accepted(): void {
      accepts[currentSlot()]!++
    },
    counts(): AdaptiveThrottleCounts {
      const t = totals()
      return { ...t, refusalProbability: refusalProbability(t.requests, t.accepts, k) }
    },
  }
}

/** Statuses that mean the server refused for load, the ones that are not accepts. */
export const THROTTLED_STATUSES: ReadonlySet<number> = new Set([429, 503])

/**
 * What {@link withRetry} returns, in place of the server's refusal, for a request its
 * adaptive throttle refused before sending: a 429 with a problem-details body, so code that
 * handles the server's 429 handles it too. `refusedLocally` tells the two apart.
 */
export class LocallyRefusedResponse extends Response {
  /** Always `true`: the request never left the client. */
  readonly refusedLocally = true as const

  constructor() {
    const body = {
      type: 'about:blank',
      title: 'Too Many Requests',
      status: 429,
      detail:
        'Refused by the client before sending: the server has been refusing many requests, and adaptive throttling drops part of the excess.',
      refusedLocally: true,
    }
    super(JSON.stringify(body), {
      status: 429,
      statusText: 'Too Many Requests',
      headers: { 'content-type': 'application/problem+json; charset=utf-8' },
    })
  }
}
