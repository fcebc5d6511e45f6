import fc from 'fast-check'
import { createLimiter, type RuleInput } from '@floodgate/core'
import type { CountersSnapshot, DecisionCounts, LimiterObserver } from '@floodgate/core/metrics'
import { Registry } from 'prom-client'
import { describe, expect, it } from 'vitest'
import { prometheusMetrics } from '@floodgate/metrics/prometheus'
import { parseExposition } from './exposition.js'

const counts = (): DecisionCounts => ({
  allowed: 1,
  rejected: 0,
  queued: 0,
  dropped: 0,
  shadowRejected: 0,
  failedOpen: 0,
  denied: 0,
  allowListed: 0,
  unmatched: 0,
})

/** A metrics source other than a limiter, whose rule ids may be any string. */
function sourceOf(ids: readonly string[]): {
  counters: () => CountersSnapshot
  observe: (o: LimiterObserver) => () => void
  queued: (id: string) => void
} {
  const observers: LimiterObserver[] = []
  return {
    counters: () => ({
      total: counts(),
      byRule: new Map(ids.map((id) => [id, counts()])),
      inFlight: new Map(ids.map((id) => [id, 1])),
    }),
    observe: (o) => {
      observers.push(o)
      return () => observers.splice(observers.indexOf(o), 1)
    },
    queued: (id) => observers.forEach((o) => o.queued?.(id, 100)),
  }
}

describe('prometheusMetrics labels', () => {
  it('escapes any rule id: the scrape parses back to the same label values', async () => {
    // Quotes, backslashes, newlines, carriage returns and any Unicode code point.
    const id = fc.oneof(
      fc.string({ unit: 'binary', minLength: 1, maxLength: 8 }),
      fc.string({ unit: fc.constantFrom('"', '\\', '\n', '\r', 'n', '}', ',', '='), minLength: 1 }),
    )
    await fc.assert(
      fc.asyncProperty(fc.uniqueArray(id, { minLength: 1, maxLength: 4 }), async (ids) => {
        const registry = new Registry()
        const source = sourceOf(ids)
        const exporter = prometheusMetrics(source, { registry })
        for (const i of ids) source.queued(i)
        const m = parseExposition(await registry.metrics())
        const rules = (name: string): Set<string | undefined> =>
          new Set(m.get(name)!.samples.map((s) => s.labels.rule))
        expect(rules('floodgate_rule_decisions_total')).toEqual(new Set(ids))
        expect(rules('floodgate_in_flight')).toEqual(new Set(ids))
        expect(rules('floodgate_queue_wait_seconds')).toEqual(new Set(ids))
        exporter.close()
      }),
      { numRuns: 25 },
    )
  })

  it('keeps the number of series bounded by rules, whatever keys and paths the requests have', async () => {
    const rules: RuleInput[] = [
      { id: 'per-key', key: 'header:x-api-key', limit: 2, window: '1m' },
      { id: 'per-path', key: 'header:x-path', limit: 3, window: '1m', shadow: true },
      {
        id: 'queue',
        match: 'GET /q/*',
        limit: 1,
        window: '1m',
        onLimit: { action: 'queue', maxWait: '5s', maxQueue: 2 },
      },
    ]
    const request = fc.record({
      key: fc.string({ maxLength: 12 }),
      path: fc.oneof(
        fc.webPath(),
        fc.string().map((s) => `/q/${encodeURIComponent(s)}`),
      ),
    })
    // size 'max': at fast-check's default size an array of maxLength 200 holds about ten requests.
    const requestsArb = fc.array(request, { minLength: 1, maxLength: 200, size: 'max' })
    await fc.assert(
      fc.asyncProperty(requestsArb, async (requests) => {
        const registry = new Registry()
        const limiter = createLimiter({ rules })
        const exporter = prometheusMetrics(limiter, { registry })
        for (const r of requests) {
          await limiter.check({
            method: 'GET',
            path: r.path === '' ? '/' : r.path,
            ip: '203.0.113.7',
            headers: { 'x-api-key': r.key, 'x-path': r.path },
          })
        }
        const m = parseExposition(await registry.metrics())
        const series = [...m.values()].reduce((n, f) => n + f.samples.length, 0)
        // Per rule: 6 outcomes, 1 in-flight, 2 adaptive gauges at most; the queue wait histogram
        // (10 buckets + Inf + sum + count) per rule; 5 outcomes, 3 reasons, store latency 2 x 12.
        const bound = rules.length * (6 + 1 + 2 + 13) + 5 + 3 + 2 * 12
        expect(series).toBeLessThanOrEqual(bound)
        const ruleLabels = new Set(
          [...m.values()].flatMap((f) => f.samples.map((s) => s.labels.rule)).filter(Boolean),
        )
        expect([...ruleLabels].every((l) => rules.some((r) => r.id === l))).toBe(true)
        exporter.close()
      }),
      { numRuns: 40 },
    )
  })
})
