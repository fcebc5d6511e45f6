/**
 * `@floodgate/core/metrics`: what a metrics exporter or a dashboard reads from a limiter: the
 * decision counters (`limiter.counters()`), the observer for queue waits and store timings
 * (`limiter.observe()`), and the heaviest refused clients (`limiter.topClients()`).
 * `@floodgate/metrics` is built on it. Types only: every value comes from the limiter itself.
 * @module @floodgate/core/metrics
 */
export type { CountersSnapshot, DecisionCounts } from '../limiter-counters.js'
export type { LimiterObserver } from '../limiter-observer.js'
export type { TopClient, TopClientsOptions, TopClientsQuery } from '../limiter-top-clients.js'
