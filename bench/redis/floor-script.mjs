// The floor both Redis benchmarks weigh: what any limiter pays that keeps Redis's clock and a
// state per client (read the clock, read the key, write it back with a TTL given as a string),
// deciding nothing.
export const FLOOR_LUA =
  "redis.call('TIME') redis.call('GET', KEYS[1]) redis.call('SET', KEYS[1], '0123456789abcdef', 'PX', '3600000') return 1"

// The same floor for a batched design (one call for up to 16 requests, as RedisStore sends
// them): `TIME` once, then per key a `GET` and a `SET … PX`, and one number answered per
// request (an array of integers), deciding nothing.
export const BATCHED_FLOOR_LUA =
  "redis.call('TIME') local a = {} for j = 1, #KEYS do redis.call('GET', KEYS[j]) redis.call('SET', KEYS[j], '0123456789abcdef', 'PX', '3600000') a[j] = 1 end return a"

/** Requests per call of the batched floor: RedisStore's `BATCH_REQUESTS`. */
export const FLOOR_BATCH = 16
