import type { AlgorithmResult } from '@floodgate/core/algorithms'

/**
 * Copies of a store's results without the name RedisStore gives a concurrency slot it took
 * (`lease`): the answers to compare with MemoryStore's, which names none.
 */
export function answers(rs: readonly AlgorithmResult[]): AlgorithmResult[] {
  return rs.map(({ lease: _lease, ...r }) => r)
}
