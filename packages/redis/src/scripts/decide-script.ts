import { concurrencyLua } from './concurrency.js'
import { fixedWindowLua } from './fixed-window.js'
import { gcraLua } from './gcra.js'
import { leakyBucketLua } from './leaky-bucket.js'
import { slidingWindowCounterLua } from './sliding-window-counter.js'
import { slidingWindowLogLua } from './sliding-window-log.js'
import { tokenBucketLua } from './token-bucket.js'

/**
 * Core's `CONCURRENCY_RETRY_AFTER_MS` (the retry hint of a refused concurrency request);
 * repeated here because core's public index does not export it. The conformance suite pins it.
 */
const CONCURRENCY_RETRY_AFTER_MS = 1000

/** ARGV fields before the entries: mode ('c' consume, 'r' refund), nowMs ('' = Redis TIME), TTL slack, lease. */
export const ARGV_HEADER = 4
/**
 * Fields sent per entry in ARGV, after the header fields: algorithm name, limit,
 * windowMs, burst, cost, maxWaitMs, shadow (0 or 1).
 */
export const ARGV_PER_ENTRY = 7
/** Integers returned per entry: allowed, waitMs, limit, remaining, resetMs, retryAfterMs. */
export const RESULT_FIELDS = 6

/** Lua shared by every algorithm snippet: the constants and math helpers they use. */
const prelude = `
local EPSILON = 1e-9
local floor, ceil, max, min = math.floor, math.ceil, math.max, math.min
local ALGORITHMS = {}
local CONCURRENCY_RETRY_AFTER_MS = ${CONCURRENCY_RETRY_AFTER_MS}
local LEASE_MS = tonumber(ARGV[4])
`

/**
 * The request-level logic: load each entry's state, dry-run every entry, then (only when
 * every non-shadow entry is allowed) commit the non-shadow entries and the shadow entries
 * that allowed on their own, and write the touched states back with a TTL equal to their
 * useful life. Mode 'r' refunds instead.
 *
 * State is stored as the algorithm's Float64Array slots packed as little-endian doubles
 * (struct.pack '<d'), so values survive the round trip bit for bit: Lua's tostring keeps
 * only 14 significant digits, which would make Redis drift from core's arithmetic.
 */
const main = `
local mode = ARGV[1]
local now
if ARGV[2] == '' then
  -- Redis is the clock: every app host sees the same time (effects are replicated, so
  -- replicas and AOF get the resulting SETs, never a re-run of TIME).
  local t = redis.call('TIME')
  now = tonumber(t[1]) * 1000 + floor(tonumber(t[2]) / 1000)
else
  now = tonumber(ARGV[2])
end
local slack = tonumber(ARGV[3])
local n = (#ARGV - ${ARGV_HEADER}) / ${ARGV_PER_ENTRY}

local states = {}
local entries = {}
for i = 1, n do
  local b = ${ARGV_HEADER} + (i - 1) * ${ARGV_PER_ENTRY}
  local alg = ALGORITHMS[ARGV[b + 1]]
  if not alg then return redis.error_reply('floodgate: unknown algorithm ' .. tostring(ARGV[b + 1])) end
  local p = { limit = tonumber(ARGV[b + 2]), windowMs = tonumber(ARGV[b + 3]), burst = tonumber(ARGV[b + 4]) }
  local key = KEYS[i]
  local st = states[key]
  if not st then
    local size = alg.size(p)
    local s = {}
    local raw = redis.call('GET', key)
    -- Variable-size states (concurrency leases) take whatever whole doubles are stored.
    if raw and alg.variable then size = floor(#raw / 8) end
    if raw and #raw == size * 8 then
      local pos = 1
      for j = 1, size do s[j], pos = struct.unpack('<d', raw, pos) end
    else
      for j = 1, size do s[j] = 0 end
    end
    st = { s = s, alg = alg, p = p, dirty = false, exists = raw and true or false }
    states[key] = st
  end
  entries[i] = {
    st = st, alg = alg, p = p, cost = tonumber(ARGV[b + 5]), max_wait = tonumber(ARGV[b + 6]),
    shadow = ARGV[b + 7] == '1',
    out = { allowed = false, waitMs = 0, limit = 0, remaining = 0, resetMs = 0, retryAfterMs = 0 },
  }
end

if mode == 'c' then
  local ok = true
  for i = 1, n do
    local e = entries[i]
    e.alg.consume(e.st.s, e.p, e.cost, now, e.max_wait, false, e.out)
    if not e.shadow and not e.out.allowed then ok = false end
  end
  if ok then
    for i = 1, n do
      local e = entries[i]
      if not e.shadow or e.out.allowed then
        e.alg.consume(e.st.s, e.p, e.cost, now, e.max_wait, true, e.out)
        e.st.dirty = true
      end
    end
  end
else
  for i = 1, n do
    local e = entries[i]
    -- Like MemoryStore: a key with no state (fresh or expired) has nothing to give back.
    if e.st.exists then
      e.alg.refund(e.st.s, e.p, e.cost, now)
      e.st.dirty = true
    end
  end
end

for key, st in pairs(states) do
  if st.dirty then
    local idle = st.alg.idle_at(st.s, st.p, now)
    local ttl = ceil(idle - now)
    if ttl <= 0 then
      -- Already equal to the fresh state: nothing worth keeping.
      redis.call('DEL', key)
    else
      local parts = {}
      for j = 1, #st.s do parts[j] = struct.pack('<d', st.s[j]) end
      redis.call('SET', key, table.concat(parts), 'PX', ttl + slack)
    end
  end
end

local reply = {}
for i = 1, n do
  local o = entries[i].out
  local b = (i - 1) * ${RESULT_FIELDS}
  reply[b + 1] = o.allowed and 1 or 0
  reply[b + 2] = o.waitMs
  reply[b + 3] = o.limit
  reply[b + 4] = o.remaining
  reply[b + 5] = o.resetMs
  reply[b + 6] = o.retryAfterMs
end
reply[n * ${RESULT_FIELDS} + 1] = now
return reply
`

/**
 * The one script that decides a whole request: every algorithm's Lua port, then a per-entry
 * dispatch on the algorithm name, so a request whose rules use different algorithms is
 * still one EVALSHA, one round trip and one atomic step.
 */
export const decideScript: string = [
  prelude,
  tokenBucketLua,
  gcraLua,
  fixedWindowLua,
  slidingWindowLogLua,
  slidingWindowCounterLua,
  leakyBucketLua,
  concurrencyLua,
  main,
].join('\n')
