/**
 * `@floodgate/metrics/opentelemetry`: a limiter's metrics as OpenTelemetry instruments.
 * Loads `@opentelemetry/api` only (an optional peer dependency), never prom-client.
 * @module @floodgate/metrics/opentelemetry
 */
import { checkMethods, optionError } from '@floodgate/core/options'
import {
  createNoopMeter,
  metrics,
  type BatchObservableCallback,
  type Meter,
} from '@opentelemetry/api'
import { MeterNames } from './meter-names.js'
import {
  adaptiveByLabel,
  checkCommonOptions,
  checkLimiter,
  countOf,
  countsByLabel,
  durationSeconds,
  inFlightByLabel,
  REQUEST_OUTCOMES,
  RULE_OUTCOMES,
  RuleLabels,
  UNCOUNTED_REASONS,
  uncountedOf,
  type CommonMetricsOptions,
  type MetricsExporter,
  type MetricsSource,
} from './shared.js'

export type { MetricsExporter, MetricsSource } from './shared.js'

/** Options of {@link openTelemetryMetrics}. */
export interface OpenTelemetryMetricsOptions extends CommonMetricsOptions {
  /**
   * The meter that makes the instruments.
   * @default metrics.getMeter('@floodgate/metrics') from the global MeterProvider
   */
  readonly meter?: Meter | undefined
  /**
   * Prefix of every instrument name.
   * @default 'floodgate.'
   */
  readonly prefix?: string | undefined
}

const PREFIX_PATTERN = /^[a-zA-Z][a-zA-Z0-9_.\-/]*$/

/** The instrument names in use per meter, across every exporter of this module. */
const meterNames = new MeterNames()

const NOOP_METER_PROTOTYPE: unknown = Object.getPrototypeOf(createNoopMeter())

/** Whether the meter is the OpenTelemetry API's no-op meter (no SDK registered, or given). */
function isNoopMeter(meter: Meter): boolean {
  return Object.getPrototypeOf(meter) === NOOP_METER_PROTOTYPE
}

/**
 * Export a limiter's metrics through an OpenTelemetry meter:
 *
 * - `floodgate.decisions` (counter, `{outcome}`): requests decided;
 * - `floodgate.rule.decisions` (counter, `{rule, outcome}`): outcomes per matched rule;
 * - `floodgate.decisions.uncounted` (counter, `{reason}`): requests decided before any rule
 *   counted them (deny_list, allow_list, unmatched), also counted in `floodgate.decisions`;
 * - `floodgate.queue.wait` (histogram, s, `{rule}`): the waits queued requests were given;
 * - `floodgate.store.latency` (histogram, s, `{result}`): store calls that decided a request;
 * - `floodgate.in_flight` (gauge, `{rule}`): requests holding a concurrency slot on this host;
 * - `floodgate.adaptive.limit` (gauge, `{rule}`): an adaptive rule's limit on requests in flight;
 * - `floodgate.adaptive.latency` (gauge, s, `{rule}`): the latency percentile it watches, over
 *   its last window.
 *
 * The counters and the gauge are observed from `limiter.counters()` when the reader
 * collects; the histograms are recorded through `limiter.observe()`. No client key is ever an
 * attribute.
 *
 * @param limiter - the limiter to export
 * @param options - meter, name prefix, rule attribute cap, histogram buckets
 * @returns the exporter; `close()` stops observing (instruments cannot be deleted in
 *   OpenTelemetry: they stop reporting)
 * @throws OptionsError for a bad limiter or option, or when an open exporter already made an
 *   instrument of the same name on the meter (use another prefix or meter per limiter); never
 *   for the no-op meter the API answers without an SDK, which records nothing
 * @example
 * openTelemetryMetrics(limiter, { meter: metrics.getMeter('my-service') })
 */
export function openTelemetryMetrics(
  limiter: MetricsSource,
  options: OpenTelemetryMetricsOptions = {},
): MetricsExporter {
  checkLimiter(limiter)
  const common = checkCommonOptions(options, ['meter', 'prefix'])
  const o = options ?? {}
  const prefix = o.prefix ?? 'floodgate.'
  if (typeof prefix !== 'string' || !PREFIX_PATTERN.test(prefix)) {
    throw optionError('options.prefix', 'an OpenTelemetry instrument name prefix', prefix)
  }
  if (o.meter !== undefined) {
    checkMethods('options.meter', o.meter, [
      'createHistogram',
      'createObservableCounter',
      'createObservableGauge',
      'addBatchObservableCallback',
      'removeBatchObservableCallback',
    ])
  }
  const meter = o.meter ?? metrics.getMeter('@floodgate/metrics')
  const names = {
    decisions: `${prefix}decisions`,
    ruleDecisions: `${prefix}rule.decisions`,
    uncounted: `${prefix}decisions.uncounted`,
    inFlight: `${prefix}in_flight`,
    adaptiveLimit: `${prefix}adaptive.limit`,
    adaptiveLatency: `${prefix}adaptive.latency`,
    queueWait: `${prefix}queue.wait`,
    storeLatency: `${prefix}store.latency`,
  }
  // Without an SDK every getMeter answers the same no-op meter: it records nothing, so its
  // instruments cannot collide, and claiming names on it would refuse a second limiter.
  const release = isNoopMeter(meter) ? () => {} : meterNames.claim(meter, Object.values(names))
  const labels = new RuleLabels(common.maxRules)

  const decisions = meter.createObservableCounter(names.decisions, {
    description: 'Requests the rate limiter decided, by outcome.',
    unit: '{request}',
  })
  const ruleDecisions = meter.createObservableCounter(names.ruleDecisions, {
    description:
      'Outcomes per matched rate-limit rule (a request counts under each rule it matched).',
    unit: '{request}',
  })
  const uncounted = meter.createObservableCounter(names.uncounted, {
    description:
      'Requests decided before any rule counted them, by reason (deny_list, allow_list, unmatched); also in decisions.',
    unit: '{request}',
  })
  const inFlight = meter.createObservableGauge(names.inFlight, {
    description: 'Requests holding a concurrency slot on this host, by rule.',
    unit: '{request}',
  })
  const adaptiveLimit = meter.createObservableGauge(names.adaptiveLimit, {
    description: 'The limit on requests in flight an adaptive rule set on this host, by rule.',
    unit: '{request}',
  })
  const adaptiveLatency = meter.createObservableGauge(names.adaptiveLatency, {
    description:
      "The latency percentile an adaptive rule watches (its 'percentile'), over its last window, by rule.",
    unit: 's',
  })
  const queueWait = meter.createHistogram(names.queueWait, {
    description: 'The wait queued requests were given, by the rule that queued them.',
    unit: 's',
    advice: { explicitBucketBoundaries: common.queueWaitBuckets },
  })
  const storeLatency = meter.createHistogram(names.storeLatency, {
    description: 'Duration of the store calls that decided requests, by result (ok or error).',
    unit: 's',
    advice: { explicitBucketBoundaries: common.storeLatencyBuckets },
  })

  const observe: BatchObservableCallback = (result) => {
    const snapshot = limiter.counters()
    for (const outcome of REQUEST_OUTCOMES) {
      const n = countOf(snapshot.total, outcome)
      if (n !== undefined) result.observe(decisions, n, { outcome })
    }
    for (const reason of UNCOUNTED_REASONS) {
      const n = uncountedOf(snapshot.total, reason)
      if (n !== undefined) result.observe(uncounted, n, { reason })
    }
    for (const [rule, counts] of countsByLabel(snapshot, labels)) {
      for (const outcome of RULE_OUTCOMES) {
        const n = countOf(counts, outcome)
        if (n !== undefined) result.observe(ruleDecisions, n, { rule, outcome })
      }
    }
    for (const [rule, n] of inFlightByLabel(snapshot, labels)) {
      result.observe(inFlight, n, { rule })
    }
    for (const [rule, f] of adaptiveByLabel(limiter, labels)) {
      result.observe(adaptiveLimit, f.limit, { rule })
      if (f.latencySeconds !== undefined)
        result.observe(adaptiveLatency, f.latencySeconds, { rule })
    }
  }
  const observables = [
    decisions,
    ruleDecisions,
    uncounted,
    inFlight,
    adaptiveLimit,
    adaptiveLatency,
  ]
  meter.addBatchObservableCallback(observe, observables)

  // Attribute objects made once, not on every observation.
  const OK = { result: 'ok' }
  const ERROR = { result: 'error' }
  const ruleAttributes = new Map<string, { rule: string }>()
  let stop: (() => void) | undefined = limiter.observe({
    queued: (ruleId, waitMs) => {
      const seconds = durationSeconds(waitMs)
      if (seconds === undefined) return
      let attributes = ruleAttributes.get(ruleId)
      if (attributes === undefined) {
        attributes = { rule: labels.of(ruleId) }
        if (ruleAttributes.size < common.maxRules * 2) ruleAttributes.set(ruleId, attributes)
      }
      queueWait.record(seconds, attributes)
    },
    storeCall: (durationMs, ok) => {
      const seconds = durationSeconds(durationMs)
      if (seconds !== undefined) storeLatency.record(seconds, ok ? OK : ERROR)
    },
  })
  return {
    close() {
      if (stop === undefined) return
      stop()
      stop = undefined
      meter.removeBatchObservableCallback(observe, observables)
      release()
    },
  }
}
