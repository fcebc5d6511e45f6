import { MemoryStore } from '../stores/memory-store.js'
import type { Store } from '../stores/store.js'

/**
 * A MemoryStore that answers on a later turn, as a networked store does: for tests of what
 * depends on a store being asynchronous (queue places, store latency) without a server.
 *
 * @param memory - the store answering (a fresh MemoryStore by default)
 * @returns a store whose `consume` resolves on the next `setImmediate`
 */
export function asyncMemoryStore(memory: MemoryStore = new MemoryStore()): Store {
  return {
    consume: (entries, now) => {
      const results = memory.consume(entries, now).map((r) => ({ ...r }))
      return new Promise((resolve) => setImmediate(() => resolve(results)))
    },
    refund: (entries, now) => memory.refund(entries, now),
  }
}
