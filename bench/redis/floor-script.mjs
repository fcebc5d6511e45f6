// The floor both Redis benchmarks weigh: what any limiter pays that keeps Redis's clock and a
// state per client (read the clock, read the key, write it back with a TTL given as a string),
// deciding nothing.
export const FLOOR_LUA =
  "redis.call('TIME') redis.call('GET', KEYS[1]) redis.call('SET', KEYS[1], '0123456789abcdef', 'PX', '3600000') return 1"
