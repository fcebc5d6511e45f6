// A TypeScript consumer of the ESM-only `@floodgate/core/testing` subpath, compiled as
// testing.mts (module node16) and testing.ts (moduleResolution bundler).
import { MemoryStore } from '@floodgate/core'
import {
  describeStoreConformance,
  referenceModel,
  type ReferenceLimiter,
} from '@floodgate/core/testing'

export const ref: ReferenceLimiter = referenceModel('fixed-window').create({
  limit: 1,
  windowMs: 1000,
  burst: 1,
})
export const conformance = (): void =>
  describeStoreConformance('MemoryStore', () => new MemoryStore(), { numRuns: 10 })
// @ts-expect-error not an algorithm name
referenceModel('no-such-algorithm')
