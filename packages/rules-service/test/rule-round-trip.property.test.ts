import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { parseRules } from '@floodgate/core'
import { adminServiceOnPostgres, postgresAvailable } from './helpers.js'

// Rule documents drawn from the whole rule schema (valid and not), written to the real service
// on PostgreSQL over HTTP: an accepted set reads back, exports and imports again as the same
// data and the same rules a host compiles; a refused set leaves the stored set as it was.
const hasPostgres = await postgresAvailable()

const ALGORITHMS = [
  'token-bucket',
  'gcra',
  'leaky-bucket',
  'fixed-window',
  'sliding-window-log',
  'sliding-window-counter',
  'concurrency',
] as const

const BUCKETS = new Set(['token-bucket', 'gcra', 'leaky-bucket'])
const NO_QUEUE = new Set(['sliding-window-log', 'sliding-window-counter', 'concurrency'])

const duration = fc.oneof(
  fc.integer({ min: 1, max: 2 ** 31 - 1 }),
  fc.constantFrom('500ms', '1s', '1.5s', '10s', '1m', '1h', '1d', '24d'),
)
const text = fc.string({ unit: 'grapheme', maxLength: 12 })
const match = fc.oneof(
  fc.constant(false),
  fc.constantFrom('/login', 'GET /api/**', 'POST /users/:id'),
  fc.record(
    {
      methods: fc.uniqueArray(fc.constantFrom('GET', 'POST', 'PUT', 'DELETE'), {
        minLength: 1,
        maxLength: 3,
      }),
      paths: fc.uniqueArray(
        fc.constantFrom('/', '/api/**', '/users/:id', '/users/*/posts', '/login'),
        { minLength: 1, maxLength: 3 },
      ),
      headers: fc.dictionary(
        fc.constantFrom('x-api-key', 'x-plan'),
        fc.oneof(text, fc.constant(true)),
        {
          maxKeys: 2,
        },
      ),
      hosts: fc.uniqueArray(fc.constantFrom('api.example.com', 'www.example.com'), {
        minLength: 1,
        maxLength: 2,
      }),
    },
    { requiredKeys: [] },
  ),
)
const keyPart = fc.constantFrom('ip', 'user', 'header:x-api-key', 'custom:tenant')

const deny = fc.record(
  {
    ips: fc.uniqueArray(fc.constantFrom('10.0.0.1', '10.0.0.0/8', '2001:db8::/32'), {
      minLength: 1,
      maxLength: 2,
    }),
    status: fc.constantFrom(403, 404, 429, 503),
  },
  { requiredKeys: ['ips'] },
)

/** A rule of the whole schema that a host accepts, its optional fields present or not. */
const validRule = fc.constantFrom(...ALGORITHMS).chain((algorithm) => {
  const bucket = BUCKETS.has(algorithm)
  return fc
    .record({
      limit: fc.integer({ min: 1, max: 10_000 }),
      extra: fc.integer({ min: 0, max: 10_000 }),
      costShare: fc.double({ min: 0, max: 1, noNaN: true }),
    })
    .chain(({ limit, extra, costShare }) => {
      const capacity = bucket ? limit + extra : limit
      const onLimits = NO_QUEUE.has(algorithm)
        ? fc.constantFrom<unknown>('reject', 'drop', { action: 'reject', status: 503 })
        : fc.oneof(
            fc.constantFrom<unknown>('reject', 'drop', { action: 'reject', status: 503 }),
            fc.record({
              action: fc.constant('queue'),
              maxWait: duration,
              maxQueue: fc.integer({ min: 1, max: 200 }),
            }),
          )
      return fc
        .record(
          {
            id: fc.stringMatching(/^[A-Za-z0-9._-]{1,12}$/),
            description: text,
            algorithm: fc.constant(algorithm),
            limit: fc.constant(limit),
            window: duration,
            ...(bucket ? { burst: fc.constant(capacity) } : {}),
            cost: fc.constant(Math.max(1, Math.floor(capacity * costShare))),
            match,
            key: fc.oneof(keyPart, fc.uniqueArray(keyPart, { minLength: 1, maxLength: 3 })),
            fallbackKey: fc.constantFrom('ip', 'skip', 'shared'),
            onLimit: onLimits,
            shadow: fc.boolean(),
            ...(algorithm === 'concurrency'
              ? {}
              : { count: fc.constantFrom('all', 'failed', 'successful') }),
            ban: fc.record({
              after: fc.integer({ min: 1, max: 1000 }),
              within: duration,
              for: duration,
            }),
          },
          {
            requiredKeys: bucket
              ? ['id', 'limit', 'window', 'algorithm', 'burst']
              : ['id', 'limit', 'window', 'algorithm'],
          },
        )
        .chain((rule) =>
          // A deny list only on a rule that matches requests.
          (rule as { match?: unknown }).match === false
            ? fc.constant(rule)
            : fc
                .option(deny, { nil: undefined })
                .map((d) => (d === undefined ? rule : { ...rule, deny: d })),
        )
    })
})

/** One field set to a value a host refuses (a limit of 0, a cost above the capacity, ...). */
const badField = fc.constantFrom<[string, unknown]>(
  ['limit', 0],
  ['limit', 1.5],
  ['window', 'soon'],
  ['window', 2 ** 31],
  ['cost', 10_000_000],
  ['algorithm', 'leaky'],
  ['fallbackKey', 'none'],
  ['onLimit', { action: 'reject', status: 500 }],
  ['match', { methods: ['BREW'] }],
  ['match', { paths: ['login'] }],
  ['key', 'nope'],
  ['deny', { ips: ['300.1.1.1'] }],
  ['ban', { after: 0, within: '1m', for: '1m' }],
  ['description', 'x'.repeat(1001)],
  ['surprise', true],
)
const ruleDoc = fc.oneof(
  { weight: 3, arbitrary: validRule },
  {
    weight: 1,
    arbitrary: fc
      .tuple(validRule, badField)
      .map(([rule, [field, value]]) => ({ ...rule, [field]: value })),
  },
)
const ruleSet = fc.uniqueArray(ruleDoc, {
  minLength: 1,
  maxLength: 4,
  selector: (r) => (r as { id: unknown }).id,
})

/** What a host makes of a list of rules, or the error that refuses it. */
function compiled(rules: unknown): unknown {
  try {
    return { rules: parseRules(rules) }
  } catch (err) {
    return { refused: true, message: err instanceof Error ? err.message : String(err) }
  }
}

describe.skipIf(!hasPostgres)('rule documents through the service and PostgreSQL', () => {
  const { call } = adminServiceOnPostgres('fg_rules_trip')
  let round = 0
  let accepted = 0
  let refused = 0

  const exported = async (service: string) => {
    const res = await call('GET', `/v1/services/${service}/ruleset`)
    expect(res.status).toBe(200)
    return (res.body as { rules: Record<string, unknown>[] }).rules
  }

  it('an accepted set reads back, exports and imports as the same data; a refused one loses nothing', async () => {
    await fc.assert(
      fc.asyncProperty(ruleSet, async (rules) => {
        round++
        const service = `trip-${round}`
        expect((await call('PUT', `/v1/services/${service}`)).status).toBe(201)
        // A set in force first: whatever comes next must not lose it if refused.
        const first = await call('PUT', `/v1/services/${service}/rules`, {
          rules: [{ id: 'kept', limit: 5, window: '1m' }],
        })
        expect(first.status).toBe(200)
        const before = await exported(service)

        const put = await call('PUT', `/v1/services/${service}/rules`, { rules })
        const host = compiled(rules)
        if (put.status !== 200) {
          // Refused: named, and the stored set is the one before, byte for byte as data.
          expect(put.status).toBe(400)
          expect(JSON.stringify(put.body)).toMatch(/rules/)
          expect(await exported(service)).toEqual(before)
          // What the service refuses, a host refuses too: no set the service keeps out is one
          // a host would have run, and none it stores is one a host would refuse.
          expect(host).toHaveProperty('refused', true)
          refused++
          return
        }
        expect(host).not.toHaveProperty('refused')
        accepted++
        const out = await exported(service)
        // The same rules, in order, as data (jsonb may reorder an object's keys, not its values).
        expect(out).toEqual(rules)
        expect(compiled(out)).toEqual(host)
        // Each rule reads back alone as it is in the set.
        for (const r of out) {
          const one = await call(
            'GET',
            `/v1/services/${service}/rules/${encodeURIComponent(String(r.id))}`,
          )
          expect(one.status).toBe(200)
          expect((one.body as { rule: unknown }).rule).toEqual(r)
        }
        // The export imported into another service, rule by rule, is the same set again.
        const copy = `${service}-copy`
        expect((await call('PUT', `/v1/services/${copy}`)).status).toBe(201)
        for (const r of out) {
          const created = await call('POST', `/v1/services/${copy}/rules`, r)
          expect(created.status).toBe(201)
        }
        expect(await exported(copy)).toEqual(out)
        // And imported whole over itself, nothing changes.
        expect((await call('PUT', `/v1/services/${service}/rules`, { rules: out })).status).toBe(
          200,
        )
        expect(await exported(service)).toEqual(out)
      }),
      { numRuns: 60 },
    )
    // Both sides of the property ran: the generator is not all refusals, nor all valid.
    console.info('rule round trip', JSON.stringify({ accepted, refused }))
    expect(accepted).toBeGreaterThanOrEqual(10)
    expect(refused).toBeGreaterThanOrEqual(10)
  }, 120_000)
})
