// The store operation of Floodgate and of each peer, as each is used per request.
import { createLimiter, MemoryStore, testRuleForBench } from './floodgate.mjs'
import { RateLimiterMemory } from 'rate-limiter-flexible'
import { MemoryStore as ErlMemoryStore } from 'express-rate-limit'
import { createRequire } from 'node:module'

const require = createRequire(import.meta.url)
const FrlLocalStore = require('@fastify/rate-limit/store/LocalStore.js')

const WINDOW_MS = 60_000
const HUGE = 1e12 // a limit nothing reaches: we measure the decision, not the refusal

/** Each contender: { name, sync, make(maxKeys) → op(key) }. */
export const storeContenders = [
  {
    name: 'floodgate MemoryStore',
    sync: true,
    make(maxKeys) {
      const store = new MemoryStore({ maxKeys: Math.max(maxKeys, 1) })
      const rule = testRuleForBench('token-bucket', HUGE, WINDOW_MS)
      const entries = [{ rule, key: '', cost: 1, maxWaitMs: 0, shadow: false }]
      let now = Date.now()
      return (key) => {
        entries[0] = { rule, key, cost: 1, maxWaitMs: 0, shadow: false }
        return store.consume(entries, now)[0].allowed
      }
    },
  },
  {
    name: 'rate-limiter-flexible RateLimiterMemory',
    sync: false,
    make() {
      const rl = new RateLimiterMemory({ points: HUGE, duration: WINDOW_MS / 1000 })
      return (key) => rl.consume(key)
    },
  },
  {
    name: 'express-rate-limit MemoryStore',
    sync: false,
    make() {
      const store = new ErlMemoryStore()
      store.init({ windowMs: WINDOW_MS })
      return (key) => store.increment(key)
    },
  },
  {
    name: '@fastify/rate-limit LocalStore',
    sync: true,
    make(maxKeys) {
      const store = new FrlLocalStore(false, false, Math.max(maxKeys, 5000))
      let last
      const cb = (_err, v) => {
        last = v
      }
      return (key) => {
        store.incr(key, cb, WINDOW_MS, HUGE)
        return last
      }
    },
  },
]

/** Floodgate's full check(): rule matching, key building and the store. */
export function makeCheck() {
  const limiter = createLimiter({
    rules: [{ id: 'per-ip', match: { methods: ['GET'] }, key: 'ip', limit: 1_000_000_000, window: '1m' }],
  })
  return (facts) => limiter.check(facts)
}
