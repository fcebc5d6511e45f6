/**
 * @module @floodgate/metrics
 *
 * Metrics of the Floodgate rate limiter for Prometheus and OpenTelemetry. Each integration
 * is its own entry point so that importing one never loads the other's library:
 * `@floodgate/metrics/prometheus` (needs `prom-client`) and `@floodgate/metrics/opentelemetry`
 * (needs `@opentelemetry/api`). This root loads neither: it holds the label values and
 * defaults both share.
 */
export {
  DEFAULT_MAX_RULES,
  DEFAULT_QUEUE_WAIT_BUCKETS,
  DEFAULT_STORE_LATENCY_BUCKETS,
  OTHER_RULES,
  REQUEST_OUTCOMES,
  RULE_OUTCOMES,
  UNCOUNTED_REASONS,
} from './shared.js'
export type {
  CommonMetricsOptions,
  MetricsExporter,
  MetricsSource,
  RequestOutcomeLabel,
  RuleOutcomeLabel,
  UncountedReasonLabel,
} from './shared.js'
