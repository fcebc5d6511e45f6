// The store operation of Floodgate and of each peer, as each is used per request.
import { createLimiter, MemoryStore, systemClock, testRuleForBench } from './floodgate.mjs'
import { RateLimiterMemory } from 'rate-limiter-flexible'
import { MemoryStore as ErlMemoryStore } from 'express-rate-limit'
import { createRequire } from 'node:module'
export { plainBucket } from './plain-bucket.mjs'

const require = createRequire(import.meta.url)
const FrlLocalStore = require('@fastify/rate-limit/store/LocalStore.js')

// A limit nothing reaches within a run (1e9 per ~11.6 days), so we measure decisions, not
// refusals. A bucket that refills faster than float precision would look idle at once and be
// swept, which no realistic rule does.
const WINDOW_MS = 1_000_000_000
const HUGE = 1_000_000_000

/**
 * Each contender: { name, sync, make(keys, capacity?) → op(index) }, deciding for `keys[index]`.
 * Bounded stores get room for `capacity` keys (default: all of them).
 */
export const storeContenders = [
  {
    name: 'floodgate MemoryStore (time given)',
    sync: true,
    make(keys, capacity = keys.length) {
      const store = new MemoryStore({ maxKeys: Math.max(capacity, 1) })
      const rule = testRuleForBench('token-bucket', HUGE, WINDOW_MS)
      const entries = [{ rule, key: '', cost: 1, maxWaitMs: 0, shadow: false }]
      const now = Date.now()
      // The store operation as the limiter calls it: the time is read once per decision, by
      // the limiter, and handed in.
      return (i) => {
        entries[0].key = keys[i]
        return store.consume(entries, now)[0].allowed
      }
    },
  },
  {
    name: 'floodgate MemoryStore',
    sync: true,
    make(keys, capacity = keys.length) {
      const store = new MemoryStore({ maxKeys: Math.max(capacity, 1) })
      const rule = testRuleForBench('token-bucket', HUGE, WINDOW_MS)
      // The limiter reuses its entry objects with a synchronous store; so does this bench.
      const entry = { rule, key: '', cost: 1, maxWaitMs: 0, shadow: false }
      const entries = [entry]
      return (i) => {
        entry.key = keys[i]
        // The peers read the clock inside their store call; the limiter reads it once per
        // decision and hands it to the store, so the fair comparison counts one read here.
        return store.consume(entries, Date.now())[0].allowed
      }
    },
  },
  {
    name: 'rate-limiter-flexible RateLimiterMemory',
    sync: false,
    make(keys) {
      const rl = new RateLimiterMemory({ points: HUGE, duration: 60 })
      return (i) => rl.consume(keys[i])
    },
  },
  {
    name: 'express-rate-limit MemoryStore',
    sync: false,
    make(keys) {
      const store = new ErlMemoryStore()
      store.init({ windowMs: 60_000 })
      return (i) => store.increment(keys[i])
    },
  },
  {
    name: '@fastify/rate-limit LocalStore',
    sync: true,
    make(keys, capacity = keys.length) {
      const store = new FrlLocalStore(false, false, Math.max(capacity, 5000))
      let last
      const cb = (_err, v) => {
        last = v
      }
      return (i) => {
        store.incr(keys[i], cb, 60_000, HUGE)
        return last
      }
    },
  },
]

/**
 * The full check(): rule matching, key building, store, decision. `create` is another build's
 * createLimiter, to time two builds side by side (BENCH_CORE_B in run.mjs).
 */
export function checkWith(name, clock, create = createLimiter) {
  return {
    name,
    sync: true,
    make(keys) {
      const limiter = create({
        clock,
        rules: [
          { id: 'per-ip', match: { methods: ['GET'] }, key: 'ip', limit: HUGE, window: WINDOW_MS },
        ],
      })
      const facts = keys.map((ip) => ({ method: 'GET', path: '/api/items', ip, headers: {} }))
      return (i) => limiter.check(facts[i])
    },
  }
}

/**
 * check() with its default clock (turnClock: one Date.now() per event-loop turn; this loop is
 * one turn per round, as a busy server deciding many requests per turn) and with systemClock
 * (a Date.now() per call, as every peer row pays).
 */
export const checkContenders = [
  checkWith('floodgate check() (match + key + store; clock read once per turn)', undefined),
  checkWith('floodgate check() with systemClock (a Date.now() per call)', systemClock),
]
