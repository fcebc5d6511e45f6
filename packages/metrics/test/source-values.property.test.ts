import fc from 'fast-check'
import type { CountersSnapshot, DecisionCounts } from '@floodgate/core/metrics'
import { MeterProvider, MetricReader, type DataPoint } from '@opentelemetry/sdk-metrics'
import { Counter, Registry } from 'prom-client'
import { describe, expect, it } from 'vitest'
import { openTelemetryMetrics } from '@floodgate/metrics/opentelemetry'
import { prometheusMetrics } from '@floodgate/metrics/prometheus'
import { parseExposition } from './exposition.js'

// A metrics source other than a limiter may count anything: NaN, negative or infinite numbers.
// The model: a count that is finite and >= 0 is exported as it is, any other is left out, and
// the scrape always succeeds, the application's own metrics in it. Failed before: prom-client
// throws on a negative or infinite increment, inside collect(), so registry.metrics() rejected
// ("It is not possible to decrease a counter") and the whole scrape was lost.

const FIELDS = [
  'allowed',
  'rejected',
  'queued',
  'dropped',
  'shadowRejected',
  'failedOpen',
  'denied',
  'allowListed',
  'unmatched',
] as const
const OUTCOME: Record<string, (typeof FIELDS)[number]> = {
  allowed: 'allowed',
  rejected: 'rejected',
  queued: 'queued',
  dropped: 'dropped',
  shadow_rejected: 'shadowRejected',
  failed_open: 'failedOpen',
}

const value = fc.oneof(
  fc.nat({ max: 1_000_000 }),
  fc.constantFrom(NaN, -1, -0.5, Infinity, -Infinity, Number.MAX_VALUE),
  fc.double(),
)
const countsArb = fc.record(
  Object.fromEntries(FIELDS.map((f) => [f, value])) as Record<
    (typeof FIELDS)[number],
    typeof value
  >,
)
const snapshotArb: fc.Arbitrary<Snapshot> = fc.record({
  total: countsArb,
  rules: fc.uniqueArray(
    fc.record({ id: fc.stringMatching(/^[a-z]{1,6}$/), counts: countsArb, inFlight: value }),
    {
      selector: (r) => r.id,
      maxLength: 4,
    },
  ),
})

interface Snapshot {
  readonly total: Record<(typeof FIELDS)[number], number>
  readonly rules: readonly {
    readonly id: string
    readonly counts: Record<(typeof FIELDS)[number], number>
    readonly inFlight: number
  }[]
}

const isCount = (n: number) => Number.isFinite(n) && n >= 0
/** -0 and 0 are the same count (the exposition writes both as 0). */
const plain = (m: Map<string, number>) => new Map([...m].map(([k, v]) => [k, v + 0]))

function sourceOf(s: Snapshot) {
  return {
    counters: (): CountersSnapshot => ({
      total: s.total,
      byRule: new Map(s.rules.map((r) => [r.id, r.counts as DecisionCounts])),
      inFlight: new Map(s.rules.map((r) => [r.id, r.inFlight])),
    }),
    observe: () => () => {},
  }
}

/** What the model says is exported: series key → value. */
function expected(s: Snapshot): Map<string, number> {
  const out = new Map<string, number>()
  for (const [outcome, field] of Object.entries(OUTCOME)) {
    if (outcome !== 'shadow_rejected' && isCount(s.total[field]))
      out.set(`decisions outcome=${outcome}`, s.total[field])
    for (const r of s.rules) {
      if (isCount(r.counts[field])) out.set(`rule ${r.id} outcome=${outcome}`, r.counts[field])
    }
  }
  for (const [reason, field] of [
    ['deny_list', 'denied'],
    ['allow_list', 'allowListed'],
    ['unmatched', 'unmatched'],
  ] as const) {
    if (isCount(s.total[field])) out.set(`uncounted reason=${reason}`, s.total[field])
  }
  for (const r of s.rules) if (isCount(r.inFlight)) out.set(`in_flight ${r.id}`, r.inFlight)
  return out
}

class OnDemandReader extends MetricReader {
  protected onShutdown(): Promise<void> {
    return Promise.resolve()
  }
  protected onForceFlush(): Promise<void> {
    return Promise.resolve()
  }
}

describe('counts a source sends that are not counts', () => {
  it('prometheus: are left out, the rest exported, and the scrape never fails (property)', async () => {
    await fc.assert(
      fc.asyncProperty(snapshotArb, async (s) => {
        const registry = new Registry()
        new Counter({ name: 'app_requests_total', help: 'the app', registers: [registry] }).inc()
        const exporter = prometheusMetrics(sourceOf(s), { registry })
        const m = parseExposition(await registry.metrics())
        expect(m.get('app_requests_total')!.samples[0]!.value).toBe(1)
        const got = new Map<string, number>()
        for (const x of m.get('floodgate_decisions_total')!.samples)
          got.set(`decisions outcome=${x.labels.outcome}`, x.value)
        for (const x of m.get('floodgate_rule_decisions_total')!.samples)
          got.set(`rule ${x.labels.rule} outcome=${x.labels.outcome}`, x.value)
        for (const x of m.get('floodgate_uncounted_decisions_total')!.samples)
          got.set(`uncounted reason=${x.labels.reason}`, x.value)
        for (const x of m.get('floodgate_in_flight')!.samples)
          got.set(`in_flight ${x.labels.rule}`, x.value)
        expect(plain(got)).toEqual(plain(expected(s)))
        exporter.close()
      }),
      { numRuns: 200 },
    )
  })

  it('opentelemetry: are left out, the rest observed, and collection reports no error (property)', async () => {
    await fc.assert(
      fc.asyncProperty(snapshotArb, async (s) => {
        const reader = new OnDemandReader()
        const provider = new MeterProvider({ readers: [reader] })
        const exporter = openTelemetryMetrics(sourceOf(s), { meter: provider.getMeter('t') })
        const { resourceMetrics, errors } = await reader.collect()
        expect(errors).toEqual([])
        const got = new Map<string, number>()
        for (const scope of resourceMetrics.scopeMetrics) {
          for (const metric of scope.metrics) {
            for (const p of metric.dataPoints as DataPoint<number>[]) {
              const a = p.attributes
              const key = {
                'floodgate.decisions': `decisions outcome=${String(a.outcome)}`,
                'floodgate.rule.decisions': `rule ${String(a.rule)} outcome=${String(a.outcome)}`,
                'floodgate.decisions.uncounted': `uncounted reason=${String(a.reason)}`,
                'floodgate.in_flight': `in_flight ${String(a.rule)}`,
              }[metric.descriptor.name]
              if (key !== undefined) got.set(key, p.value)
            }
          }
        }
        expect(plain(got)).toEqual(plain(expected(s)))
        exporter.close()
        await provider.shutdown()
      }),
      { numRuns: 100 },
    )
  })
})
