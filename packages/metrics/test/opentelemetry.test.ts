import { MemoryStore, createLimiter, type RuleInput, type Store } from '@floodgate/core'
import {
  DataPointType,
  MeterProvider,
  MetricReader,
  type DataPoint,
  type Histogram,
  type MetricData,
} from '@opentelemetry/sdk-metrics'
import { createNoopMeter } from '@opentelemetry/api'
import { describe, expect, it } from 'vitest'
import { openTelemetryMetrics } from '@floodgate/metrics/opentelemetry'
import { asyncMemoryStore } from '@floodgate/core/testing'

/** A reader that exports only when the test asks (`collect()`): no timers. */
class OnDemandReader extends MetricReader {
  protected onShutdown(): Promise<void> {
    return Promise.resolve()
  }
  protected onForceFlush(): Promise<void> {
    return Promise.resolve()
  }
}

async function collect(reader: MetricReader): Promise<Map<string, MetricData>> {
  const { resourceMetrics, errors } = await reader.collect()
  expect(errors).toEqual([])
  const out = new Map<string, MetricData>()
  for (const scope of resourceMetrics.scopeMetrics) {
    for (const m of scope.metrics) out.set(m.descriptor.name, m)
  }
  return out
}

function point(
  m: MetricData | undefined,
  attrs: Readonly<Record<string, string>>,
): DataPoint<unknown> | undefined {
  const points = (m?.dataPoints ?? []) as DataPoint<unknown>[]
  return points.find((p) => Object.entries(attrs).every(([k, v]) => p.attributes[k] === v))
}

const facts = { method: 'GET', path: '/', ip: '203.0.113.7', headers: {} }
const memory = new MemoryStore()

function setup(rules: RuleInput[], maxRules?: number, store?: Store) {
  const reader = new OnDemandReader()
  const provider = new MeterProvider({ readers: [reader] })
  const limiter = createLimiter({ rules, clock: () => 1_000_000, ...(store && { store }) })
  const exporter = openTelemetryMetrics(limiter, {
    meter: provider.getMeter('test'),
    queueWaitBuckets: [0.5, 1, 2],
    ...(maxRules !== undefined && { maxRules }),
  })
  return { reader, limiter, exporter }
}

describe('openTelemetryMetrics with an in-memory reader', () => {
  it('observes decisions by outcome and by rule, in-flight slots and store latency', async () => {
    const { reader, limiter } = setup(
      [
        { id: 'per-ip', limit: 2, window: '1m' },
        { id: 'trial', limit: 1, window: '1m', shadow: true },
        { id: 'slots', algorithm: 'concurrency', limit: 10 },
      ],
      undefined,
      asyncMemoryStore(),
    )
    const actions: string[] = []
    for (let i = 0; i < 3; i++) actions.push((await limiter.check(facts)).action)
    expect(actions).toEqual(['allow', 'allow', 'reject'])
    const m = await collect(reader)

    const total = m.get('floodgate.decisions')
    expect(total?.dataPointType).toBe(DataPointType.SUM)
    expect(point(total, { outcome: 'allowed' })?.value).toBe(2)
    expect(point(total, { outcome: 'rejected' })?.value).toBe(1)
    const byRule = m.get('floodgate.rule.decisions')
    expect(point(byRule, { rule: 'per-ip', outcome: 'rejected' })?.value).toBe(1)
    expect(point(byRule, { rule: 'trial', outcome: 'shadow_rejected' })?.value).toBe(2)
    expect(point(byRule, { rule: 'slots', outcome: 'allowed' })?.value).toBe(2)

    const inFlight = m.get('floodgate.in_flight')
    expect(inFlight?.dataPointType).toBe(DataPointType.GAUGE)
    expect(point(inFlight, { rule: 'slots' })?.value).toBe(2)

    const latency = m.get('floodgate.store.latency')
    expect(latency?.dataPointType).toBe(DataPointType.HISTOGRAM)
    expect(latency?.descriptor.unit).toBe('s')
    expect((point(latency, { result: 'ok' })?.value as Histogram).count).toBe(3)

    // Attributes are rule, outcome and result only: never a client key.
    const keys = new Set(
      [...m.values()].flatMap((x) =>
        (x.dataPoints as DataPoint<unknown>[]).flatMap((p) => Object.keys(p.attributes)),
      ),
    )
    expect([...keys].sort()).toEqual(['outcome', 'reason', 'result', 'rule'])
  })

  it('observes requests decided before any counting by reason, dropped and failed-open ones', async () => {
    const reader = new OnDemandReader()
    const provider = new MeterProvider({ readers: [reader] })
    const limiter = createLimiter({
      rules: [
        { id: 'per-ip', match: 'GET /', limit: 5, window: '1m' },
        { id: 'drop', match: 'GET /drop', limit: 1, window: '1m', onLimit: { action: 'drop' } },
        { id: 'flaky', match: 'GET /flaky', limit: 5, window: '1m' },
      ],
      store: {
        consume: (entries, now) => {
          if (entries.some((e) => e.rule.rule.id === 'flaky')) throw new Error('store down')
          return memory.consume(entries, now)
        },
        refund: (entries, now) => memory.refund(entries, now),
      },
      clock: () => 1_000_000,
      deny: { ips: ['198.51.100.0/24'] },
      allow: { ips: ['2001:db8::/32'] },
      logger: { debug() {}, info() {}, warn() {}, error() {} },
    })
    openTelemetryMetrics(limiter, { meter: provider.getMeter('test') })
    const at = (path: string, ip = '203.0.113.7') => limiter.check({ ...facts, path, ip })
    await at('/', '198.51.100.9')
    await at('/', '2001:db8::1')
    await at('/', '2001:db8::2')
    await at('/nowhere')
    await at('/drop')
    await at('/drop')
    await at('/flaky')
    const m = await collect(reader)
    const uncounted = m.get('floodgate.decisions.uncounted')
    expect(uncounted?.dataPointType).toBe(DataPointType.SUM)
    expect(
      ['deny_list', 'allow_list', 'unmatched'].map((reason) => point(uncounted, { reason })?.value),
    ).toEqual([1, 2, 1])
    const decisions = m.get('floodgate.decisions')
    expect(
      ['allowed', 'rejected', 'dropped', 'failed_open'].map(
        (outcome) => point(decisions, { outcome })?.value,
      ),
    ).toEqual([4, 1, 1, 1])
    const rule = (r: string, outcome: string) =>
      point(m.get('floodgate.rule.decisions'), { rule: r, outcome })?.value
    expect([rule('drop', 'dropped'), rule('flaky', 'failed_open')]).toEqual([1, 1])
  })

  it('records queue waits in seconds by rule, with the configured buckets', async () => {
    const { reader, limiter } = setup([
      { id: 'q', limit: 1, window: '1s', onLimit: { action: 'queue', maxWait: '5s', maxQueue: 5 } },
    ])
    await limiter.check(facts)
    await limiter.check(facts)
    const wait = point((await collect(reader)).get('floodgate.queue.wait'), { rule: 'q' })
    const h = wait?.value as Histogram
    expect(h.count).toBe(1)
    expect(h.sum).toBe(1)
    expect(h.buckets.boundaries).toEqual([0.5, 1, 2])
    expect(h.buckets.counts).toEqual([0, 1, 0, 0])
  })

  it('caps the rule attribute and stops observing on close', async () => {
    const { reader, limiter, exporter } = setup(
      ['a', 'b', 'c'].map((id) => ({ id, limit: 1, window: '1m' })),
      1,
      asyncMemoryStore(),
    )
    await limiter.check(facts)
    let m = await collect(reader)
    const rules = (m.get('floodgate.rule.decisions')!.dataPoints as DataPoint<unknown>[]).map(
      (p) => p.attributes.rule,
    )
    expect(new Set(rules)).toEqual(new Set(['a', '_other']))
    expect(
      point(m.get('floodgate.rule.decisions'), { rule: '_other', outcome: 'allowed' })?.value,
    ).toBe(2)
    exporter.close()
    exporter.close()
    await limiter.check(facts)
    m = await collect(reader)
    // The reader keeps the last observed value (cumulative); the second request is not in it.
    expect(point(m.get('floodgate.decisions'), { outcome: 'allowed' })?.value).toBe(1)
    expect(
      (point(m.get('floodgate.store.latency'), { result: 'ok' })?.value as Histogram).count,
    ).toBe(1)
  })

  it('refuses bad arguments with errors naming them', () => {
    const limiter = createLimiter()
    expect(() => openTelemetryMetrics(limiter, { meter: {} as never })).toThrow(
      /options\.meter\.createHistogram: expected a function/,
    )
    expect(() => openTelemetryMetrics(limiter, { prefix: '' })).toThrow(/options\.prefix/)
    expect(() => openTelemetryMetrics(limiter, { storeLatencyBuckets: [] })).toThrow(
      /options\.storeLatencyBuckets: expected a non-empty list/,
    )
    expect(() => openTelemetryMetrics(null as never)).toThrow(/limiter: expected an object/)
  })
})

describe('openTelemetryMetrics: two limiters on one meter', () => {
  it('without an SDK (the no-op meter every getMeter answers), two exporters with the default prefix coexist', () => {
    const a = createLimiter({ rules: [{ id: 'r', limit: 10, window: '1m' }] })
    const b = createLimiter({ rules: [{ id: 'r', limit: 10, window: '1m' }] })
    // No meter provider registered: both fall back to the one no-op meter, which records nothing.
    const first = openTelemetryMetrics(a)
    const second = openTelemetryMetrics(b)
    // The same for a no-op meter given explicitly.
    const third = openTelemetryMetrics(b, { meter: createNoopMeter() })
    for (const e of [first, second, third]) e.close()
  })

  it('refuses a second exporter whose instruments the meter already has, and allows it after close()', async () => {
    const reader = new OnDemandReader()
    const provider = new MeterProvider({ readers: [reader] })
    const meter = provider.getMeter('test')
    const a = createLimiter({ rules: [{ id: 'r', limit: 10, window: '1m' }] })
    const b = createLimiter({ rules: [{ id: 'r', limit: 10, window: '1m' }] })
    const first = openTelemetryMetrics(a, { meter })
    // The same instruments would be observed twice: the meter keeps one value, the other is lost.
    expect(() => openTelemetryMetrics(b, { meter })).toThrow(
      /options\.meter: expected a meter without an instrument named floodgate\.decisions/,
    )
    // Names are case-insensitive in OpenTelemetry, and a prefix can reach another's names.
    expect(() => openTelemetryMetrics(b, { meter, prefix: 'FLOODGATE.' })).toThrow(/options\.meter/)
    expect(() => openTelemetryMetrics(b, { meter, prefix: 'floodgate.rule.' })).toThrow(
      /instrument named floodgate\.rule\.decisions/,
    )
    // Another meter of the same provider is another scope: no clash.
    openTelemetryMetrics(b, { meter: provider.getMeter('other') })
    /** Requests allowed, as each meter's scope reports them. */
    const allowed = async () => {
      const { resourceMetrics } = await reader.collect()
      return resourceMetrics.scopeMetrics.map((scope) => [
        scope.scope.name,
        point(
          scope.metrics.find((x) => x.descriptor.name === 'floodgate.decisions'),
          { outcome: 'allowed' },
        )?.value,
      ])
    }
    for (let i = 0; i < 3; i++) await a.check(facts)
    expect(await allowed()).toEqual([
      ['test', 3],
      ['other', 0],
    ])
    first.close()
    const again = openTelemetryMetrics(b, { meter, prefix: 'api.' })
    again.close()
    openTelemetryMetrics(b, { meter })
    await b.check(facts)
    expect(await allowed()).toEqual([
      ['test', 1],
      ['other', 1],
    ])
  })
})

describe('openTelemetryMetrics: adaptive rules', () => {
  it('observes the limit and the watched latency percentile of each adaptive rule', async () => {
    let now = 1_000_000
    const reader = new OnDemandReader()
    const provider = new MeterProvider({ readers: [reader] })
    const limiter = createLimiter({
      clock: () => now,
      rules: [
        {
          id: 'shed',
          algorithm: 'adaptive',
          adaptive: { target: '100ms', window: '1s', initialLimit: 8, minSamples: 2 },
        },
      ],
    })
    openTelemetryMetrics(limiter, { meter: provider.getMeter('test') })
    const held = [limiter.check(facts), limiter.check(facts)]
    now += 50
    for (const d of held) if (!(d instanceof Promise)) limiter.release(d)
    now += 1000
    const m = await collect(reader)
    // Fast, but the traffic never filled the limit: it holds.
    expect(point(m.get('floodgate.adaptive.limit'), { rule: 'shed' })?.value).toBe(8)
    expect(m.get('floodgate.adaptive.latency')?.descriptor.unit).toBe('s')
    const latency = point(m.get('floodgate.adaptive.latency'), { rule: 'shed' })?.value as number
    expect(latency).toBeGreaterThan(0.049)
    expect(latency).toBeLessThan(0.051)
  })
})
