import { MemoryStore } from './stores/memory-store.js'
import { describeClientStateProperty } from './testing/client-state-property.js'

describeClientStateProperty('MemoryStore', { store: () => new MemoryStore(), runs: 300 })
