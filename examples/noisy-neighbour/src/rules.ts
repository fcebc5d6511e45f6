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
