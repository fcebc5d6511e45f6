import type { RuleInput } from '@floodgate/core'

/** Header that names the calling client (an API key in a real service). */
export const CLIENT_HEADER = 'x-api-key'

/** Database work of each endpoint, in milliseconds of one pooled connection. */
export const WORK_MS = { items: 20, export: 160 } as const

/**
 * Route cost of the heavy endpoint in limiter units: an export holds a connection 8× as
 * long as a list, so it spends 8 units of the client's budget.
 */
export const EXPORT_COST = WORK_MS.export / WORK_MS.items

/** Each client's budget in limiter units a second. */
export const UNITS_PER_SECOND = 25

/**
 * The demo's rules as plain data — what an operator would store in the rules service.
 *
 * One rule per client key: 25 units a second (a list costs 1, an export 8) with a burst of
 * 16 (an export and a few lists at once). A unit is 20 ms of one connection, so five
 * clients at their full share use under two-thirds of the 4-connection pool, and no client
 * can starve the others. A client over
 * its share waits briefly (up to 200 ms, 4 at a time) in Floodgate's queue, then is refused
 * with 429 and a Retry-After.
 */
export const DEMO_RULES: RuleInput[] = [
  {
    id: 'fair-share-per-client',
    description: 'Each API key gets 25 database units a second (list = 1, export = 8)',
    match: { methods: ['GET'], paths: ['/items', '/export'] },
    key: `header:${CLIENT_HEADER}`,
    fallbackKey: 'ip',
    algorithm: 'token-bucket',
    limit: UNITS_PER_SECOND,
    window: '1s',
    burst: 16,
    onLimit: { action: 'queue', maxWait: '200ms', maxQueue: 4 },
  },
]

/** The adaptive rule's id: `limiter.adaptive(ADAPTIVE_RULE_ID)` gives its live state. */
export const ADAPTIVE_RULE_ID = 'hold-p99'

/** The latency the adaptive rule holds the p99 under. */
export const ADAPTIVE_TARGET_MS = 200

/**
 * The slowdown scenario's third run: no number of requests a second at all. One adaptive rule
 * limits the requests in flight (in the same units: a list 1, an export 8) so that the p99 of
 * the responses stays under 200 ms, and moves the limit every half second from what it
 * measured. Past half the limit, only a client within its fair share of the slots is
 * admitted, so the client holding more is refused first (with 503 and Retry-After).
 *
 * `initialLimit` is the limit until the traffic fills it: 24 slots, which the healthy service
 * never needs (its requests in flight stay under 5), so the limit sits there until the
 * database slows. `minLimit` is 8 because an export takes 8 slots and must fit under any
 * limit.
 */
export const ADAPTIVE_RULES: RuleInput[] = [
  {
    id: ADAPTIVE_RULE_ID,
    description:
      'Hold the p99 under 200 ms by limiting requests in flight; over-share clients first',
    match: { methods: ['GET'], paths: ['/items', '/export'] },
    key: `header:${CLIENT_HEADER}`,
    fallbackKey: 'ip',
    algorithm: 'adaptive',
    adaptive: {
      target: `${ADAPTIVE_TARGET_MS}ms`,
      percentile: 99,
      window: '500ms',
      minLimit: 8,
      maxLimit: 200,
      initialLimit: 24,
      reserve: 0.5,
    },
  },
]
