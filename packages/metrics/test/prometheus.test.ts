import type { AddressInfo } from 'node:net'
import type { Server } from 'node:http'
import { createLimiter, type RuleInput, type Store } from '@floodgate/core'
import { rateLimit } from '@floodgate/express'
import express, { type Request } from 'express'
import { Registry } from 'prom-client'
import { afterEach, describe, expect, it } from 'vitest'
import { prometheusMetrics } from '@floodgate/metrics/prometheus'
import { asyncMemoryStore } from '@floodgate/core/testing'
import { parseExposition, valueOf } from './exposition.js'

const servers: Server[] = []
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => new Promise((r) => s.close(r))))
})

async function listen(app: express.Express): Promise<string> {
  const server = app.listen(0, '127.0.0.1')
  servers.push(server)
  await new Promise((resolve) => server.once('listening', resolve))
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`
}

/** A deferred: a promise and the function that settles it. */
function deferred(): { promise: Promise<void>; resolve: () => void } {
  let resolve!: () => void
  const promise = new Promise<void>((r) => (resolve = r))
  return { promise, resolve }
}

const rules: RuleInput[] = [
  { id: 'per-key', match: 'GET /items', key: 'header:x-api-key', limit: 2, window: '1m' },
  {
    id: 'trial',
    match: 'GET /items',
    key: 'header:x-api-key',
    limit: 1,
    window: '1m',
    shadow: true,
  },
  { id: 'slots', match: 'GET /hold', algorithm: 'concurrency', limit: 5 },
]

describe('prometheusMetrics through a real Express app', () => {
  it('serves counters by rule and outcome, store latency and in-flight requests at /metrics', async () => {
    const registry = new Registry()
    const limiter = createLimiter<Request>({ rules, store: asyncMemoryStore() })
    prometheusMetrics(limiter, { registry })

    const app = express()
    app.get('/metrics', async (_req, res) => {
      res.type(registry.contentType).send(await registry.metrics())
    })
    app.use(rateLimit(limiter))
    app.get('/items', (_req, res) => {
      res.send('ok')
    })
    const hold = deferred()
    const entered: (() => void)[] = []
    const bothEntered = new Promise<void>((resolve) => {
      let n = 0
      entered.push(() => ++n === 2 && resolve())
    })
    app.get('/hold', async (_req, res) => {
      entered[0]!()
      await hold.promise
      res.send('done')
    })
    const base = await listen(app)
    const scrape = async () => {
      const res = await fetch(`${base}/metrics`)
      expect(res.status).toBe(200)
      expect(res.headers.get('content-type')).toContain('text/plain')
      return parseExposition(await res.text())
    }

    const statuses: number[] = []
    for (let i = 0; i < 4; i++) {
      const res = await fetch(`${base}/items`, { headers: { 'x-api-key': 'tenant-a' } })
      statuses.push(res.status)
      await res.arrayBuffer()
    }
    expect(statuses).toEqual([200, 200, 429, 429])

    const holding = [fetch(`${base}/hold`), fetch(`${base}/hold`)]
    await bothEntered
    let m = await scrape()
    expect(m.get('floodgate_in_flight')?.type).toBe('gauge')
    expect(valueOf(m, 'floodgate_in_flight', { rule: 'slots' })).toBe(2)
    hold.resolve()
    for (const res of await Promise.all(holding)) expect(await res.text()).toBe('done')

    m = await scrape()
    expect(m.get('floodgate_decisions_total')?.type).toBe('counter')
    const decisions = (outcome: string) => valueOf(m, 'floodgate_decisions_total', { outcome })
    expect(decisions('allowed')).toBe(4)
    expect(decisions('rejected')).toBe(2)
    expect(decisions('queued')).toBe(0)
    expect(decisions('dropped')).toBe(0)
    expect(decisions('failed_open')).toBe(0)
    const rule = (r: string, outcome: string) =>
      valueOf(m, 'floodgate_rule_decisions_total', { rule: r, outcome })
    expect(rule('per-key', 'allowed')).toBe(2)
    expect(rule('per-key', 'rejected')).toBe(2)
    expect(rule('trial', 'shadow_rejected')).toBe(3)
    expect(rule('slots', 'allowed')).toBe(2)
    // The requests are done: nothing holds a slot, and the gauge has no series left.
    expect(valueOf(m, 'floodgate_in_flight', { rule: 'slots' })).toBeUndefined()

    expect(m.get('floodgate_store_latency_seconds')?.type).toBe('histogram')
    expect(valueOf(m, 'floodgate_store_latency_seconds_count', { result: 'ok' })).toBe(6)
    expect(valueOf(m, 'floodgate_store_latency_seconds_bucket', { result: 'ok', le: '+Inf' })).toBe(
      6,
    )
    expect(m.get('floodgate_queue_wait_seconds')?.type).toBe('histogram')

    // No client key anywhere: the only labels are rule, outcome, result and le.
    const labelNames = new Set(
      [...m.values()].flatMap((f) => f.samples.flatMap((s) => Object.keys(s.labels))),
    )
    expect([...labelNames].sort()).toEqual(['le', 'outcome', 'reason', 'result', 'rule'])
    expect(JSON.stringify([...m.values()])).not.toContain('tenant-a')
  })
})

describe('prometheusMetrics through a real Express app: every outcome', () => {
  it('counts lists, unmatched, dropped and failed-open requests, and what each was', async () => {
    const registry = new Registry()
    const memory = asyncMemoryStore()
    // The store fails for the 'flaky' rule only, so its requests pass unjudged (fail-open).
    const store: Store = {
      consume: (entries, now) =>
        entries.some((e) => e.rule.rule.id === 'flaky')
          ? Promise.reject(new Error('store down'))
          : memory.consume(entries, now),
      refund: (entries, now) => memory.refund(entries, now),
    }
    const limiter = createLimiter<Request>({
      rules: [
        { id: 'per-key', match: 'GET /items', key: 'header:x-api-key', limit: 5, window: '1m' },
        { id: 'dropper', match: 'GET /drop', limit: 1, window: '1m', onLimit: { action: 'drop' } },
        { id: 'flaky', match: 'GET /flaky', limit: 5, window: '1m' },
      ],
      store,
      deny: { keys: { 'header:x-api-key': ['leaked-key'] } },
      allow: { keys: { 'header:x-api-key': ['partner-key'] } },
      unmatched: 'reject',
      logger: { debug() {}, info() {}, warn() {}, error() {} },
    })
    prometheusMetrics(limiter, { registry })

    const app = express()
    app.get('/metrics', async (_req, res) => {
      res.type(registry.contentType).send(await registry.metrics())
    })
    app.use(rateLimit(limiter))
    for (const path of ['/items', '/drop', '/flaky', '/nowhere']) {
      app.get(path, (_req, res) => {
        res.send('ok')
      })
    }
    const base = await listen(app)
    const status = (path: string, key?: string) =>
      fetch(`${base}${path}`, key === undefined ? {} : { headers: { 'x-api-key': key } }).then(
        async (res) => {
          await res.arrayBuffer()
          return res.status
        },
        () => 'dropped',
      )

    expect([
      await status('/items', 'leaked-key'),
      await status('/items', 'partner-key'),
      await status('/items', 'partner-key'),
      await status('/items', 'tenant-a'),
      await status('/nowhere'),
      await status('/drop'),
      await status('/drop'),
      await status('/flaky'),
    ]).toEqual([403, 200, 200, 200, 503, 200, 'dropped', 200])

    const m = parseExposition(await (await fetch(`${base}/metrics`)).text())
    const decisions = (outcome: string) => valueOf(m, 'floodgate_decisions_total', { outcome })
    expect(['allowed', 'rejected', 'queued', 'dropped', 'failed_open'].map(decisions)).toEqual([
      4, 2, 0, 1, 1,
    ])
    expect(m.get('floodgate_uncounted_decisions_total')?.type).toBe('counter')
    const uncounted = (reason: string) =>
      valueOf(m, 'floodgate_uncounted_decisions_total', { reason })
    expect(['deny_list', 'allow_list', 'unmatched'].map(uncounted)).toEqual([1, 2, 1])
    const rule = (r: string, outcome: string) =>
      valueOf(m, 'floodgate_rule_decisions_total', { rule: r, outcome })
    expect(rule('dropper', 'dropped')).toBe(1)
    expect(rule('flaky', 'failed_open')).toBe(1)
    expect(valueOf(m, 'floodgate_store_latency_seconds_count', { result: 'error' })).toBe(1)
    for (const key of ['leaked-key', 'partner-key', 'tenant-a']) {
      expect(JSON.stringify([...m.values()])).not.toContain(key)
    }
  })
})

describe('prometheusMetrics', () => {
  const queueRule: RuleInput = {
    id: 'q',
    limit: 1,
    window: '1s',
    onLimit: { action: 'queue', maxWait: '5s', maxQueue: 5 },
  }
  const facts = { method: 'GET', path: '/', ip: '203.0.113.7', headers: {} }

  it('records the wait queued requests were given, by rule', async () => {
    const registry = new Registry()
    const limiter = createLimiter({ rules: [queueRule], clock: () => 1_000_000 })
    prometheusMetrics(limiter, { registry, queueWaitBuckets: [0.5, 1, 2] })
    await limiter.check(facts)
    expect(limiter.check(facts)).toMatchObject({ action: 'queue', waitMs: 1000 })
    const m = parseExposition(await registry.metrics())
    const wait = (le: string) =>
      valueOf(m, 'floodgate_queue_wait_seconds_bucket', { rule: 'q', le })
    expect([wait('0.5'), wait('1'), wait('2'), wait('+Inf')]).toEqual([0, 1, 1, 1])
    expect(valueOf(m, 'floodgate_queue_wait_seconds_sum', { rule: 'q' })).toBe(1)
    expect(valueOf(m, 'floodgate_rule_decisions_total', { rule: 'q', outcome: 'queued' })).toBe(1)
  })

  it('caps the rule label: rules past maxRules add up under _other', async () => {
    const registry = new Registry()
    const limiter = createLimiter({
      rules: ['a', 'b', 'c'].map((id) => ({ id, limit: 1, window: '1m' })),
    })
    prometheusMetrics(limiter, { registry, maxRules: 2 })
    await limiter.check(facts)
    await limiter.check(facts)
    const m = parseExposition(await registry.metrics())
    const series = m.get('floodgate_rule_decisions_total')!.samples
    expect(new Set(series.map((s) => s.labels.rule))).toEqual(new Set(['a', 'b', '_other']))
    expect(
      valueOf(m, 'floodgate_rule_decisions_total', { rule: '_other', outcome: 'rejected' }),
    ).toBe(1)
    expect(valueOf(m, 'floodgate_rule_decisions_total', { rule: 'a', outcome: 'allowed' })).toBe(1)
  })

  it('takes a prefix, refuses a registry that already has its metrics, and leaves it on close', async () => {
    const registry = new Registry()
    const limiter = createLimiter({ rules: [queueRule] })
    const first = prometheusMetrics(limiter, { registry })
    expect(() => prometheusMetrics(limiter, { registry })).toThrow(
      /options\.registry: expected a registry without a metric named floodgate_decisions_total/,
    )
    prometheusMetrics(limiter, { registry, prefix: 'api_' })
    let names = [...parseExposition(await registry.metrics()).keys()]
    expect(names).toContain('api_decisions_total')
    first.close()
    first.close()
    names = [...parseExposition(await registry.metrics()).keys()]
    expect(names.filter((n) => n.startsWith('floodgate_'))).toEqual([])
    expect(names).toContain('api_in_flight')
  })

  it('close() leaves the metrics of a newer exporter that took its names after registry.clear()', async () => {
    // A hot reload: clear the registry, export the new limiter, then close the old exporter.
    const registry = new Registry()
    const old = prometheusMetrics(createLimiter({ rules: [queueRule] }), { registry })
    registry.clear()
    const limiter = createLimiter({ rules: [{ id: 'fresh', limit: 5, window: '1m' }] })
    const current = prometheusMetrics(limiter, { registry })
    old.close()
    await limiter.check(facts)
    const m = parseExposition(await registry.metrics())
    expect([...m.keys()].filter((n) => n.startsWith('floodgate_'))).toHaveLength(8)
    expect(
      valueOf(m, 'floodgate_rule_decisions_total', { rule: 'fresh', outcome: 'allowed' }),
    ).toBe(1)
    current.close()
    expect(await registry.metrics()).not.toContain('floodgate_')
  })

  it('refuses bad arguments with errors naming them', () => {
    const limiter = createLimiter()
    const registry = new Registry()
    expect(() => prometheusMetrics({} as never)).toThrow(
      /limiter\.counters: expected a function \(limiter must be an object with counters\(\), observe\(\)\)/,
    )
    expect(() => prometheusMetrics(limiter, { registry, prefix: '1x' })).toThrow(/options\.prefix/)
    expect(() => prometheusMetrics(limiter, { registry, maxRules: 0 })).toThrow(
      /options\.maxRules: expected an integer from 1 to 10000, got 0/,
    )
    expect(() => prometheusMetrics(limiter, { registry, queueWaitBuckets: [1, 0.5] })).toThrow(
      /options\.queueWaitBuckets: expected a non-empty list of increasing positive numbers/,
    )
    expect(() => prometheusMetrics(limiter, { registry: {} as Registry })).toThrow(
      /options\.registry: expected a prom-client Registry/,
    )
    expect(() => prometheusMetrics(limiter, { registry, buckets: [1] } as never)).toThrow(
      /options\.buckets: unknown setting/,
    )
  })
})

describe('prometheusMetrics: a rule named _other', () => {
  it('keeps its adaptive gauges while it is within the label cap', async () => {
    const registry = new Registry()
    const limiter = createLimiter({
      rules: [{ id: '_other', algorithm: 'adaptive', adaptive: { initialLimit: 8 } }],
    })
    prometheusMetrics(limiter, { registry })
    const m = parseExposition(await registry.metrics())
    expect(valueOf(m, 'floodgate_adaptive_limit', { rule: '_other' })).toBe(8)
  })
})

describe('prometheusMetrics: adaptive rules', () => {
  it('exports the limit an adaptive rule set and the latency percentile it watches, by rule', async () => {
    let now = 1_000_000
    const registry = new Registry()
    const limiter = createLimiter({
      clock: () => now,
      rules: [
        {
          id: 'shed',
          algorithm: 'adaptive',
          adaptive: { target: '100ms', window: '1s', initialLimit: 8, minSamples: 2 },
        },
        { id: 'per-ip', limit: 100, window: '1m' },
      ],
    })
    prometheusMetrics(limiter, { registry })
    let m = parseExposition(await registry.metrics())
    expect(m.get('floodgate_adaptive_limit')?.type).toBe('gauge')
    expect(valueOf(m, 'floodgate_adaptive_limit', { rule: 'shed' })).toBe(8)
    expect(valueOf(m, 'floodgate_adaptive_limit', { rule: 'per-ip' })).toBeUndefined()
    // No window measured yet: no latency series.
    expect(valueOf(m, 'floodgate_adaptive_latency_seconds', { rule: 'shed' })).toBeUndefined()

    const facts = { method: 'GET', path: '/', ip: '203.0.113.7', headers: {} }
    const held = [limiter.check(facts), limiter.check(facts), limiter.check(facts)]
    m = parseExposition(await registry.metrics())
    expect(valueOf(m, 'floodgate_in_flight', { rule: 'shed' })).toBe(3)
    now += 400
    for (const d of held) if (!(d instanceof Promise)) limiter.release(d)
    now += 1000
    m = parseExposition(await registry.metrics())
    const latency = valueOf(m, 'floodgate_adaptive_latency_seconds', { rule: 'shed' })!
    expect(latency).toBeGreaterThan(0.396)
    expect(latency).toBeLessThan(0.404)
    // Four times the target: the limit fell (halved at most, smoothed by half).
    expect(valueOf(m, 'floodgate_adaptive_limit', { rule: 'shed' })).toBe(6)
  })
})
