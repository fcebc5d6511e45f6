/**
 * @module @floodgate/core/testing
 * Conformance suites and reference models, for testing stores and adapters against core.
 */
export type { StoreConformanceOptions } from './conformance.js'
export { describeStoreConformance } from './conformance.js'
export type { TestRuleOptions } from './test-rule.js'
export { testRule } from './test-rule.js'
export type {
  AdapterHarness,
  AdapterScenario,
  EchoedRateLimit,
  HarnessSetup,
  RunningApp,
  ScenarioExpect,
  ScenarioRequest,
  ScenarioResponse,
  ScenarioRoute,
  ScenarioStep,
} from './scenario-types.js'
export { echoRateLimit } from './scenario-types.js'
export { adapterScenarios } from './adapter-scenarios.js'
export type { AdapterScenarioOptions } from './scenario-runner.js'
export { describeAdapterScenarios } from './scenario-runner.js'
export type { AbortPropertyOptions } from './abort-property.js'
export { describeAbortProperty } from './abort-property.js'
export type { ReferenceLimiter, ReferenceModel, ReferenceResult } from './reference-models.js'
export { referenceModel, referenceModels } from './reference-models.js'
export type { AlgorithmVector, VectorStep } from './vectors.js'
export { vectors } from './vectors.js'
export type { FileServe, SpellingRoute, SpellingVariant } from './request-targets.js'
export {
  describeFileServerSpellings,
  describeSpellingProperty,
  sendRaw,
  spellingOf,
  spellingRoutes,
  spellingRules,
} from './request-targets.js'
export { describeHostileFuzz } from './hostile-fuzz.js'
export type { CorsServe, CorsServeOptions } from './cors-exposure.js'
export { describeCorsExposure } from './cors-exposure.js'
export type { OutcomeServe, OutcomeServeOptions } from './plans-and-outcomes.js'
export { describePlansAndOutcomes } from './plans-and-outcomes.js'
export type { ClientChosenKeysServe } from './client-chosen-keys.js'
export { describeClientChosenKeys } from './client-chosen-keys.js'
export type { ClientStatePropertyOptions } from './client-state-property.js'
export { describeClientStateProperty } from './client-state-property.js'
export type { AdaptiveServe } from './adaptive-shedding.js'
export { describeAdaptiveShedding } from './adaptive-shedding.js'
export type { LoopbackServer } from './loopback.js'
export { listenOnLoopback } from './loopback.js'
export type {
  MisconfigurationWarningsOptions,
  ProxyTrust,
  WarningsServe,
  WarningsServeOptions,
} from './misconfiguration-warnings.js'
export { describeMisconfigurationWarnings } from './misconfiguration-warnings.js'
export type { HeadersSentOptions, HeadersSentServe } from './headers-sent.js'
export { describeHeadersAlreadySent } from './headers-sent.js'
export type { UnixSocketServe } from './missing-address.js'
export { describeMissingAddressWarning } from './missing-address.js'
export { asyncMemoryStore } from './async-memory-store.js'
export type { Http2App, Http2Serve } from './http2.js'
export { describeHttp2 } from './http2.js'
export { describeHttp2AbortProperty } from './http2-abort-property.js'
export type { KeepAliveServe } from './keep-alive.js'
export { describeKeepAliveProperty } from './keep-alive.js'
export type { AgreeCallbacks, AgreeOptions, AgreeServe, AgreeTrust } from './adapters-agree.js'
export {
  agreeMountOptions,
  describeAdaptersAgree,
  describeAppCallbackAnswers,
} from './adapters-agree.js'
