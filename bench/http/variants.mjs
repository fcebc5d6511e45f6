// The HTTP benchmarks' servers (bench/http/server.mjs), in table order, and their row names:
// one list for the timed run (run.mjs) and the instruction counts (instructions.mjs).

/** [variant, mode, frameworks?] triples; bare first, every ratio is to it. */
export const VARIANTS = [
  ['bare', 'pass'],
  // The floor: an empty middleware or hook, and one that only sets two constant RateLimit
  // headers. No limiter that sends those headers can cost less than the second.
  ['noop', 'pass'],
  ['headers', 'pass'],
  ['floodgate', 'pass'],
  ['peer', 'pass'],
  ['floodgate', 'reject'],
  ['peer', 'reject'],
  // Floodgate's stores side by side, with the one rule a SyncedStore can share (a token
  // bucket): the MemoryStore row is the limiter's per-request work, the others add their store.
  // Fastify only: the fastest framework, where a store's cost shows most.
  ['floodgate-tb', 'pass', ['fastify']],
  ['synced', 'pass', ['fastify']],
  ['redis', 'pass', ['fastify']],
]

/** The variants a framework runs, `[variant, mode]` pairs, bare first. */
export const variantsFor = (framework) =>
  VARIANTS.filter(([, , only]) => !only || only.includes(framework)).map(([v, m]) => [v, m])

const NAMES = {
  noop: 'empty middleware',
  headers: 'two constant headers',
  floodgate: 'Floodgate',
  'floodgate-tb': 'Floodgate, token bucket (MemoryStore)',
  synced: 'Floodgate + SyncedStore',
  redis: 'Floodgate + RedisStore',
}
const PEERS = {
  express: 'express-rate-limit',
  fastify: '@fastify/rate-limit',
  koa: 'koa-ratelimit',
}

/** A variant's row name in a framework's table. */
export const variantName = (framework, variant) =>
  variant === 'peer' ? PEERS[framework] : (NAMES[variant] ?? variant)
