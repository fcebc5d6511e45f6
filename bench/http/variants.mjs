// The HTTP benchmarks' servers (bench/http/server.mjs), in table order, and their row names:
// one list for the timed run (run.mjs) and the instruction counts (instructions.mjs).

/** [variant, mode] pairs; bare first, every ratio is to it. */
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
]

const NAMES = {
  noop: 'empty middleware',
  headers: 'two constant headers',
  floodgate: 'Floodgate',
}
const PEERS = {
  express: 'express-rate-limit',
  fastify: '@fastify/rate-limit',
  koa: 'koa-ratelimit',
}

/** A variant's row name in a framework's table. */
export const variantName = (framework, variant) =>
  variant === 'peer' ? PEERS[framework] : (NAMES[variant] ?? variant)
