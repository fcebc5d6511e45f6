import { MemoryStore, type Store } from '@floodgate/core'

/**
 * MemoryStore answering on a later turn, as a networked store does: the limiter times only
 * asynchronous stores, so this is what makes store latency observable without a server.
 */
export function asyncMemoryStore(): Store {
  const memory = new MemoryStore()
  return {
    consume: (entries, now) => {
      const results = memory.consume(entries, now).map((r) => ({ ...r }))
      return new Promise((resolve) => setImmediate(() => resolve(results)))
    },
    refund: (entries, now) => memory.refund(entries, now),
  }
}
