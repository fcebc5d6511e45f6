/**
 * `@floodgate/metrics/prometheus`: a limiter's metrics in a prom-client registry. Loads
 * prom-client only (an optional peer dependency), never OpenTelemetry.
 * @module @floodgate/metrics/prometheus
 */
import { optionError } from '@floodgate/core/options'
import {
  Counter,
  Gauge,
  register as defaultRegistry,
  type Metric,
  type Registry,
} from 'prom-client'
import { LabelledHistogram } from './prometheus-histogram.js'
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

/** Options of {@link prometheusMetrics}. */
export interface PrometheusMetricsOptions extends CommonMetricsOptions {
  /**
   * The registry the metrics join.
   * @default prom-client's default registry (`register`)
   */
  readonly registry?: Registry | undefined
  /**
   * Prefix of every metric name.
   * @default 'floodgate_'
   */
  readonly prefix?: string | undefined
}

const PREFIX_PATTERN = /^[a-zA-Z_:][a-zA-Z0-9_:]*$/

/**
 * Export a limiter's metrics to a prom-client registry:
 *
 * - `floodgate_decisions_total{outcome}`: requests decided (allowed, rejected, queued,
 *   dropped, failed_open);
 * - `floodgate_rule_decisions_total{rule, outcome}`: outcomes per matched rule (also
 *   shadow_rejected);
 * - `floodgate_uncounted_decisions_total{reason}`: requests decided before any rule counted
 *   them (deny_list, allow_list, unmatched), also counted in `floodgate_decisions_total`;
 * - `floodgate_queue_wait_seconds{rule}`: the waits queued requests were given;
 * - `floodgate_store_latency_seconds{result}`: store calls that decided a request (ok, error);
 * - `floodgate_in_flight{rule}`: requests holding a concurrency slot on this host;
 * - `floodgate_adaptive_limit{rule}`: an adaptive rule's limit on requests in flight here;
 * - `floodgate_adaptive_latency_seconds{rule}`: the latency percentile the adaptive rule
 *   watches, over its last window.
 *
 * Counters and the gauge are read from `limiter.counters()` at scrape time; the histograms
 * are fed by `limiter.observe()`. No client key is ever a label.
 *
 * @param limiter - the limiter to export
 * @param options - registry, name prefix, rule label cap, histogram buckets
 * @returns the exporter; `close()` removes the metrics from the registry
 * @throws OptionsError for a bad limiter or option, or when the registry already holds a
 *   metric of the same name (use another prefix or registry per limiter)
 * @example
 * const registry = new Registry()
 * prometheusMetrics(limiter, { registry })
 * app.get('/metrics', async (_req, res) => {
 *   res.type(registry.contentType).send(await registry.metrics())
 * })
 */
export function prometheusMetrics(
  limiter: MetricsSource,
  options: PrometheusMetricsOptions = {},
): MetricsExporter {
  checkLimiter(limiter)
  const common = checkCommonOptions(options, ['registry', 'prefix'])
  const o = options ?? {}
  const prefix = o.prefix ?? 'floodgate_'
  if (typeof prefix !== 'string' || !PREFIX_PATTERN.test(prefix)) {
    throw optionError(
      'options.prefix',
      'a Prometheus metric name prefix ([a-zA-Z_:][a-zA-Z0-9_:]*)',
      prefix,
    )
  }
  const registry = o.registry ?? defaultRegistry
  if (
    typeof registry !== 'object' ||
    registry === null ||
    typeof registry.getSingleMetric !== 'function'
  ) {
    throw optionError('options.registry', 'a prom-client Registry', registry)
  }
  const names = {
    decisions: `${prefix}decisions_total`,
    ruleDecisions: `${prefix}rule_decisions_total`,
    uncounted: `${prefix}uncounted_decisions_total`,
    queueWait: `${prefix}queue_wait_seconds`,
    storeLatency: `${prefix}store_latency_seconds`,
    inFlight: `${prefix}in_flight`,
    adaptiveLimit: `${prefix}adaptive_limit`,
    adaptiveLatency: `${prefix}adaptive_latency_seconds`,
  }
  for (const name of Object.values(names)) {
    if (registry.getSingleMetric(name) !== undefined) {
      throw optionError(
        'options.registry',
        `a registry without a metric named ${name} (give each limiter its own prefix or registry)`,
        registry,
      )
    }
  }

  const labels = new RuleLabels(common.maxRules)
  const registers = [registry]

  new Counter({
    name: names.decisions,
    help: 'Requests the rate limiter decided, by outcome.',
    labelNames: ['outcome'],
    registers,
    collect() {
      const total = limiter.counters().total
      this.reset()
      for (const outcome of REQUEST_OUTCOMES) {
        const n = countOf(total, outcome)
        if (n !== undefined) this.inc({ outcome }, n)
      }
    },
  })
  new Counter({
    name: names.uncounted,
    help: 'Requests decided before any rule counted them, by reason (deny_list, allow_list, unmatched); also in decisions_total.',
    labelNames: ['reason'],
    registers,
    collect() {
      const total = limiter.counters().total
      this.reset()
      for (const reason of UNCOUNTED_REASONS) {
        const n = uncountedOf(total, reason)
        if (n !== undefined) this.inc({ reason }, n)
      }
    },
  })
  new Counter({
    name: names.ruleDecisions,
    help: 'Outcomes per matched rate-limit rule (a request counts under each rule it matched).',
    labelNames: ['rule', 'outcome'],
    registers,
    collect() {
      const byLabel = countsByLabel(limiter.counters(), labels)
      this.reset()
      for (const [rule, counts] of byLabel) {
        for (const outcome of RULE_OUTCOMES) {
          const n = countOf(counts, outcome)
          if (n !== undefined) this.inc({ rule, outcome }, n)
        }
      }
    },
  })
  new Gauge({
    name: names.inFlight,
    help: 'Requests holding a concurrency slot on this host, by rule.',
    labelNames: ['rule'],
    registers,
    collect() {
      const inFlight = inFlightByLabel(limiter.counters(), labels)
      this.reset()
      for (const [rule, n] of inFlight) this.set({ rule }, n)
    },
  })
  new Gauge({
    name: names.adaptiveLimit,
    help: 'The limit on requests in flight an adaptive rule set on this host, by rule.',
    labelNames: ['rule'],
    registers,
    collect() {
      this.reset()
      for (const [rule, f] of adaptiveByLabel(limiter, labels)) this.set({ rule }, f.limit)
    },
  })
  new Gauge({
    name: names.adaptiveLatency,
    help: "The latency percentile an adaptive rule watches (its 'percentile'), over its last window, by rule.",
    labelNames: ['rule'],
    registers,
    collect() {
      this.reset()
      for (const [rule, f] of adaptiveByLabel(limiter, labels)) {
        if (f.latencySeconds !== undefined) this.set({ rule }, f.latencySeconds)
      }
    },
  })
  const queueWait = new LabelledHistogram(
    names.queueWait,
    'The wait queued requests were given, by the rule that queued them.',
    'rule',
    common.queueWaitBuckets,
  )
  const storeLatency = new LabelledHistogram(
    names.storeLatency,
    'Duration of the store calls that decided requests, by result (ok or error).',
    'result',
    common.storeLatencyBuckets,
  )
  // prom-client types registerMetric for its own classes; the registry needs only name, help,
  // type and get(), which LabelledHistogram has.
  registry.registerMetric(queueWait as unknown as Metric)
  registry.registerMetric(storeLatency as unknown as Metric)
  const ours = Object.values(names).map((name) => [name, registry.getSingleMetric(name)] as const)

  const latencyOk = storeLatency.seriesFor('ok')
  const latencyError = storeLatency.seriesFor('error')
  const waitByRule = new Map<string, (seconds: number) => void>()
  let stop: (() => void) | undefined = limiter.observe({
    queued: (ruleId, waitMs) => {
      const seconds = durationSeconds(waitMs)
      if (seconds === undefined) return
      let observe = waitByRule.get(ruleId)
      if (observe === undefined) {
        observe = queueWait.seriesFor(labels.of(ruleId))
        if (waitByRule.size < common.maxRules * 2) waitByRule.set(ruleId, observe)
      }
      observe(seconds)
    },
    storeCall: (durationMs, ok) => {
      const seconds = durationSeconds(durationMs)
      if (seconds !== undefined) (ok ? latencyOk : latencyError)(seconds)
    },
  })
  return {
    close() {
      if (stop === undefined) return
      stop()
      stop = undefined
      // Only the metrics still ours: after registry.clear() (a hot reload) a name may belong
      // to a newer exporter, whose metrics must stay.
      for (const [name, metric] of ours) {
        if (registry.getSingleMetric(name) === metric) registry.removeSingleMetric(name)
      }
    },
  }
}
