import type { RuleInput } from '@floodgate/core'

/** Header that names the calling client (an API key in a real service). */
export const CLIENT_HEADER = 'x-api-key'

/** Database work of each endpoint, in milliseconds of one pooled connection. */
export const WORK_MS = { items: 10, export: 80 } as const

/**
 * Route cost of the heavy endpoint in limiter units: an export holds a connection 8× as
 * long as a list, so it spends 8 units of the client's budget.
 */
export const EXPORT_COST = WORK_MS.export / WORK_MS.items

/**
 * The demo's rules as plain data — what an operator would store in the rules service.
 *
 * One rule per client key: 40 units a second (a list costs 1, an export 8) with a burst of
 * 40. Five clients at their full share use half of the pool, so no client can starve the
 * others. A client over its share waits briefly in a small queue, then is refused with 429.
 */
export const DEMO_RULES: RuleInput[] = [
  {
    id: 'fair-share-per-client',
    description: 'Each API key gets 40 database units a second (list = 1, export = 8)',
    match: { methods: ['GET'], paths: ['/items', '/export'] },
    key: `header:${CLIENT_HEADER}`,
    fallbackKey: 'ip',
    algorithm: 'token-bucket',
    limit: 40,
    window: '1s',
    burst: 40,
    onLimit: { action: 'queue', maxWait: '250ms', maxQueue: 8 },
  },
]
