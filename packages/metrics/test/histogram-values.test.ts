import type { LimiterObserver } from '@floodgate/core/metrics'
import {
  MeterProvider,
  MetricReader,
  type DataPoint,
  type Histogram,
} from '@opentelemetry/sdk-metrics'
import fc from 'fast-check'
import { Registry } from 'prom-client'
import { describe, expect, it } from 'vitest'
import { openTelemetryMetrics } from '@floodgate/metrics/opentelemetry'
import { prometheusMetrics } from '@floodgate/metrics/prometheus'
import type { MetricsSource } from '@floodgate/metrics'
import { parseExposition, valueOf } from './exposition.js'

// An exporter takes any source with counters() and observe(), not only a limiter of ours, so
// the values its histograms are fed can be anything a number can be.

/** A source whose observers the test calls directly. */
function fakeSource(): { source: MetricsSource; observers: LimiterObserver[] } {
  const observers: LimiterObserver[] = []
  const zero = {
    allowed: 0,
    rejected: 0,
    queued: 0,
    dropped: 0,
    shadowRejected: 0,
    failedOpen: 0,
    denied: 0,
    allowListed: 0,
    unmatched: 0,
  }
  const source: MetricsSource = {
    counters: () => ({ total: zero, byRule: new Map(), inFlight: new Map() }),
    observe: (o) => {
      observers.push(o)
      return () => observers.splice(observers.indexOf(o), 1)
    },
  }
  return { source, observers }
}

/** Milliseconds as hostile as a double gets: NaN, infinities, negatives, -0, huge, tiny. */
const anyMs = fc.oneof(
  fc.double(),
  fc.constantFrom(NaN, Infinity, -Infinity, -0, -1, Number.MAX_VALUE, Number.MIN_VALUE),
  fc.double({ min: 0, max: 100_000, noNaN: true }),
)
const valid = (ms: number) => Number.isFinite(ms) && ms >= 0

class OnDemandReader extends MetricReader {
  protected onShutdown(): Promise<void> {
    return Promise.resolve()
  }
  protected onForceFlush(): Promise<void> {
    return Promise.resolve()
  }
}

describe('histograms fed values that are not durations', () => {
  it('Prometheus: NaN, negative and infinite values are left out; the scrape stays valid and its sum finite', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(anyMs, { maxLength: 40 }), async (values) => {
        const registry = new Registry()
        const { source, observers } = fakeSource()
        const exporter = prometheusMetrics(source, { registry, queueWaitBuckets: [0.5, 1] })
        for (const ms of values) {
          observers[0]!.queued!('q', ms)
          observers[0]!.storeCall!(ms, true)
        }
        const kept = values.filter(valid)
        const m = parseExposition(await registry.metrics())
        exporter.close()
        if (kept.length === 0) {
          expect(valueOf(m, 'floodgate_queue_wait_seconds_count', { rule: 'q' }) ?? 0).toBe(0)
          return
        }
        for (const [name, label] of [
          ['floodgate_queue_wait_seconds', { rule: 'q' }],
          ['floodgate_store_latency_seconds', { result: 'ok' }],
        ] as const) {
          expect(valueOf(m, `${name}_count`, label)).toBe(kept.length)
          expect(valueOf(m, `${name}_bucket`, { ...label, le: '+Inf' })).toBe(kept.length)
          const sum = valueOf(m, `${name}_sum`, label)!
          expect(Number.isFinite(sum)).toBe(true)
          expect(sum).toBeGreaterThanOrEqual(0)
        }
        const le = (b: string) =>
          valueOf(m, 'floodgate_queue_wait_seconds_bucket', { rule: 'q', le: b })
        expect(le('0.5')).toBe(kept.filter((ms) => ms <= 500).length)
        expect(le('1')).toBe(kept.filter((ms) => ms <= 1000).length)
      }),
      { numRuns: 200 },
    )
  })

  it('OpenTelemetry: NaN, negative and infinite values are not recorded; sum, min and max stay finite', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(anyMs, { maxLength: 40 }), async (values) => {
        const reader = new OnDemandReader()
        const provider = new MeterProvider({ readers: [reader] })
        const { source, observers } = fakeSource()
        openTelemetryMetrics(source, { meter: provider.getMeter('test') })
        for (const ms of values) {
          observers[0]!.queued!('q', ms)
          observers[0]!.storeCall!(ms, true)
        }
        const kept = values.filter(valid)
        const { resourceMetrics } = await reader.collect()
        const metrics = resourceMetrics.scopeMetrics.flatMap((s) => s.metrics)
        for (const name of ['floodgate.queue.wait', 'floodgate.store.latency']) {
          const points = (metrics.find((x) => x.descriptor.name === name)?.dataPoints ??
            []) as DataPoint<Histogram>[]
          const count = points.reduce((n, p) => n + p.value.count, 0)
          expect(count).toBe(kept.length)
          for (const p of points) {
            for (const v of [p.value.sum, p.value.min, p.value.max]) {
              if (v !== undefined) expect(Number.isFinite(v)).toBe(true)
            }
          }
        }
        await provider.shutdown()
      }),
      { numRuns: 100 },
    )
  })
})
