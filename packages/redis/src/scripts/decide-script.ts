import { CONCURRENCY_RETRY_AFTER_MS, type AlgorithmName } from '@floodgate/core/algorithms'
import { concurrencyLua } from './concurrency.js'
import { fixedWindowLua } from './fixed-window.js'
import { gcraLua } from './gcra.js'
import { leakyBucketLua } from './leaky-bucket.js'
import { slidingWindowCounterLua } from './sliding-window-counter.js'
import { slidingWindowLogLua } from './sliding-window-log.js'
import { tokenBucketLua } from './token-bucket.js'
import { MAX_TTL_MS } from '../key-ttl.js'
import {
  ARGV,
  ENTRY_FIELDS,
  ENTRY_FORMAT,
  REQUEST_HEADER_FORMAT,
  RESULT_FORMAT,
  WIRE_MODES,
} from '../wire-format.js'

/**
 * Each algorithm's Lua: a function expression `(op, s, limit, window_ms, burst, cost, now,
 * max_wait, commit, out)` (concurrency takes the entry's `lease` name too) that writes its answer into the array `out` (allowed 1/0, waitMs,
 * limit, remaining, resetMs, retryAfterMs), which doubles as the script's reply. The buckets
 * receive their rate as core's `exactRate` (see `encodeRequests`) in `limit` and `window_ms`.
 */
const ALGORITHM_LUA: Readonly<Record<AlgorithmName, string>> = {
  'token-bucket': tokenBucketLua,
  gcra: gcraLua,
  'fixed-window': fixedWindowLua,
  'sliding-window-log': slidingWindowLogLua,
  'sliding-window-counter': slidingWindowCounterLua,
  'leaky-bucket': leakyBucketLua,
  concurrency: concurrencyLua,
}

/** Names of the algorithms the scripts implement. */
export const SCRIPT_ALGORITHMS: readonly AlgorithmName[] = Object.keys(
  ALGORITHM_LUA,
) as AlgorithmName[]

const prelude = `
local EPSILON = 1e-9
local floor, ceil, max, min = math.floor, math.ceil, math.max, math.min
-- The longest TTL set (2^62 ms): Redis refuses an expiry past 2^63 - 1 ms.
local MAX_TTL = ${MAX_TTL_MS}
-- core's unitsLeft: the largest whole n >= 0 with used + n * step <= capacity * step + tol
-- (the admission test; step 1, or the buckets' steps per unit); the estimate is confirmed by
-- the test, and moved by at most two steps each way when off.
local function units_left(used, capacity, step, tol)
  step = step or 1
  tol = tol or EPSILON
  local room = capacity * step + tol
  local n = floor((room - used) / step)
  if not (n > 0) then n = 0 end
  if used + (n + 1) * step > room and (n == 0 or used + n * step <= room) then return n end
  for _ = 1, 2 do
    if n > 0 and used + n * step > room then n = n - 1 else break end
  end
  for _ = 1, 2 do
    if used + (n + 1) * step <= room then n = n + 1 else break end
  end
  if n > 0 and used + n * step <= room then return n end
  return 0
end
-- core's wholeSteps: the relative rounding a bucket's balance read back may carry
local WHOLE_SLACK = 2 ^ -51
`

/** What only the concurrency algorithm reads: parsing the lease costs every other call. */
const concurrencyPrelude = `
local CONCURRENCY_RETRY_AFTER_MS = ${CONCURRENCY_RETRY_AFTER_MS}
local LEASE_MS = tonumber(ARGV[${ARGV.leaseMs}])
`

/**
 * Lua that reads `key`'s packed state into a new table `s` of `size` doubles (0: variable),
 * all zero when the key is missing. Tables are built at their final size: growing one
 * element at a time rehashes.
 */
const loadState = (key: string, size: string): string => `
  local s
  local size = ${size}
  -- A key of another type (a hash, a list: not Floodgate's) reads as fresh, and the SET or
  -- DEL that follows replaces it. An error here would fail every request of the batch open,
  -- other clients' included.
  local raw = redis.pcall('GET', ${key})
  if type(raw) == 'table' then raw = false end
  -- Variable-size states (concurrency leases) take whatever whole doubles are stored.
  if raw and size == 0 then size = floor(#raw / 8) end
  if raw and #raw == size * 8 then
    if size == 2 then
      s = { 0, 0 }
      s[1], s[2] = struct.unpack('<dd', raw)
    elseif size == 3 then
      s = { 0, 0, 0 }
      s[1], s[2], s[3] = struct.unpack('<ddd', raw)
    else
      s = {}
      local pos = 1
      for j = 1, size do s[j], pos = struct.unpack('<d', raw, pos) end
    end
  elseif size == 2 then
    s = { 0, 0 }
  elseif size == 3 then
    s = { 0, 0, 0 }
  else
    s = {}
    for j = 1, size do s[j] = 0 end
  end`

/** The entry's fields as Lua locals, from the wire format's one list; shadow's is named. */
const entryLocals = (shadow: string): string =>
  ENTRY_FIELDS.map((f) => (f.name === 'shadow' ? shadow : f.name)).join(', ')

/** Lua that reads the sign of `max_wait`: negative says the client's queue is full. */
const queueFullFlag = `local full = max_wait < 0
  if full then max_wait = -max_wait end`

/**
 * Lua that reads the next packed entry at `pos` into locals (`alg`, its numbers, `key`),
 * advancing `pos` and the key index `k`; the shadow flag goes to the local named `shadow`.
 * The locals and the unpack format come from the wire format's one list of entry fields. A
 * negative `max_wait` says the client's queue is full (`queueFull`): `full` is set and
 * `max_wait` made positive.
 */
const readEntry = (shadow: string): string => {
  const locals = entryLocals(shadow)
  return `
  local ${locals}
  ${locals}, pos = struct.unpack('${ENTRY_FORMAT}', blob, pos)
  local alg = ALG[ai]
  if not alg then return redis.error_reply('floodgate: unknown algorithm ' .. ai) end
  k = k + 1
  local key = KEYS[k]
  ${queueFullFlag}`
}

/** Lua mirroring core's `refuseReservation`: an admission that would wait becomes a refusal. */
const refuseReservation = (out: string): string =>
  `if ${out}[1] == 1 and ${out}[2] > 0 then ${out}[1] = 0; ${out}[6] = max(1, ${out}[2]); ${out}[2] = 0 end`

/**
 * Lua that writes state `s` back under `key` with a TTL of its useful life (the algorithm's
 * idle time), or deletes it when it is already fresh.
 */
const storeState = (alg: string, key: string, params: string, out: string): string => `
  -- 'i' answers the ms from now until the state is fresh again, summed from the state's own
  -- times minus now first: a life of a few nanoseconds added to an epoch in ms would round away
  -- and delete a state MemoryStore still holds.
  local ttl = ceil(${alg}('i', s, ${params}, 0, now, 0, false, ${out}))
  if not (ttl > 0) then
    -- Already equal to the fresh state: nothing worth keeping. A NaN life (a state of the right
    -- size that Floodgate did not write) is read as fresh, like a state of the wrong size.
    redis.call('DEL', ${key})
  else
    local size = #s
    local packed
    if size == 2 then
      packed = struct.pack('<dd', s[1], s[2])
    elseif size == 3 then
      packed = struct.pack('<ddd', s[1], s[2], s[3])
    else
      local parts = {}
      for j = 1, size do parts[j] = struct.pack('<d', s[j]) end
      packed = table.concat(parts)
    end
    -- Redis writes a number argument with '%.17g' (glibc's float printer: a third of the cost
    -- of the SET, and "1e+17" from 10^17 on, which PX refuses): the TTL goes as an integer
    -- string, capped where Redis would refuse the expiry (a debt of Number.MAX_SAFE_INTEGER
    -- units, a burst that takes longer than that to refill).
    local px = ttl + slack
    if not (px < MAX_TTL) then px = MAX_TTL end
    redis.call('SET', ${key}, packed, 'PX', string.format('%d', px))
  end`

/** Lua that sets `now`: Redis's clock, or the caller's when ARGV carries one. */
const clock = `
local now
if ARGV[${ARGV.now}] == '' then
  -- Redis is the clock: every app host sees the same time (effects are replicated, so
  -- replicas and AOF get the resulting SETs, never a re-run of TIME).
  local t = redis.call('TIME')
  now = tonumber(t[1]) * 1000 + floor(tonumber(t[2]) / 1000)
else
  now = tonumber(ARGV[${ARGV.now}])
end
local slack = tonumber(ARGV[${ARGV.ttlSlack}])`

/**
 * Lua that consumes a one-entry request (the entry's locals, state `s` loaded, `out` zeroed)
 * with `alg`, and writes the state back when it admitted: the algorithm's own commit is
 * all-or-nothing (a refusal writes nothing), shadow or not.
 */
const consumeOne = (alg: string): string => `
    if full then
      -- The client's queue is full: record only an admission that does not wait.
      ${alg}('c', s, limit, window_ms, burst, cost, now, max_wait, false, out, lease)
      ${refuseReservation('out')}
      if out[1] == 1 then ${alg}('c', s, limit, window_ms, burst, cost, now, max_wait, true, out, lease) end
    else
      ${alg}('c', s, limit, window_ms, burst, cost, now, max_wait, true, out, lease)
    end
    if out[1] == 1 then
      ${storeState(alg, 'key', 'limit, window_ms, burst', 'out')}
    end`

/** Lua that packs `out` as one entry's result. */
const packOut = `struct.pack('${RESULT_FORMAT}', out[1], out[2], out[3], out[4], out[5], out[6])`

/**
 * The request-level logic, run for each request of the batch in turn: load each entry's
 * state, dry-run every entry, then (only when every non-shadow entry is allowed) commit the
 * non-shadow entries and the shadow entries that allowed on their own, and write the touched
 * states back with a TTL equal to their useful life. A refund request gives units back
 * instead. `ALG` is the script's list of algorithm functions. Only the algorithms' own
 * functions are defined: Lua allocates every closure afresh on each call, and on Redis that
 * cost dominated a small script.
 *
 * ARGV, KEYS and the reply are laid out as `wire-format.ts` defines them.
 * Requests of one batch are decided one after the other, each all-or-nothing on its own, at
 * one `now`: a later one sees what an earlier one charged, exactly as if each were its own
 * call.
 *
 * State is stored as the algorithm's Float64Array slots packed as little-endian doubles
 * (struct.pack '<d'), so values survive the round trip bit for bit: Lua's tostring keeps
 * only 14 significant digits, which would make Redis drift from core's arithmetic.
 */
const main = `
${clock}
-- The batch's answers, made only when there are several: a lone request returns its own.
local R
local r = 0
local k = 0
local blob = ARGV[${ARGV.batch}]
local pos = 1
local nblob = #blob
-- Reused by every one-entry request: the algorithm fills it, the reply takes a copy.
local out = { 0, 0, 0, 0, 0, 0 }

while pos <= nblob do
  local n, m
  n, m, pos = struct.unpack('${REQUEST_HEADER_FORMAT}', blob, pos)
  local mode = 'c'
  if m == 1 then mode = 'r' end

  if m >= 2 then
    -- Peek (2), reset (3) or penalize (4): each entry on its own, nothing all-or-nothing.
    for i = 1, n do
      ${readEntry('_')}
      out[1], out[2], out[3], out[4], out[5], out[6] = 0, 0, 0, 0, 0, 0
      if m == 3 then
        redis.call('DEL', key)
      else
        ${loadState('key', 'size')}
        if m == 4 then
          alg('f', s, limit, window_ms, burst, cost, now, 0, true, out)
          ${storeState('alg', 'key', 'limit, window_ms, burst', 'out')}
        else
          alg('c', s, limit, window_ms, burst, cost, now, 0, false, out)
        end
      end
      r = r + 1
      if r == 1 then R = {} end
      R[r] = ${packOut}
    end
  elseif n == 1 then
    -- The common case, one rule, without the bookkeeping of several: the algorithm's own
    -- commit is all-or-nothing (a refusal writes nothing), shadow or not.
    ${readEntry('_')}
    out[1], out[2], out[3], out[4], out[5], out[6] = 0, 0, 0, 0, 0, 0
    ${loadState('key', 'size')}
    if mode == 'c' then
      ${consumeOne('alg')}
    elseif raw then
      -- Like MemoryStore: a key with no state (fresh or expired) has nothing to give back.
      alg('r', s, limit, window_ms, burst, cost, now, 0, true, out, lease)
      ${storeState('alg', 'key', 'limit, window_ms, burst', 'out')}
    end
    -- The batch's only request (one call in flight): its answer is the reply, without R.
    local packed_out = ${packOut}
    if r == 0 and pos > nblob then return packed_out end
    r = r + 1
    if r == 1 then R = {} end
    R[r] = packed_out
  else
    -- One table per entry (its params double as the algorithm's p), one per distinct key's state.
    local E = {}
    local first_of = {}
    for i = 1, n do
      ${readEntry('shadow')}
      local e = {
        alg = alg, limit = limit, window_ms = window_ms, burst = burst, cost = cost,
        max_wait = max_wait, shadow = shadow == 1, key = key, out = { 0, 0, 0, 0, 0, 0 },
        lease = lease, full = full,
      }
      local owner = first_of[key]
      if owner then
        e.s = owner.s
      else
        ${loadState('key', 'size')}
        if raw then e.exists = true end
        e.s = s
        first_of[key] = e
      end
      E[i] = e
    end

    if mode == 'c' then
      local ok = true
      for i = 1, n do
        local e = E[i]
        e.alg('c', e.s, e.limit, e.window_ms, e.burst, e.cost, now, e.max_wait, false, e.out)
        if e.full then ${refuseReservation('e.out')} end
        if not e.shadow and e.out[1] == 0 then ok = false end
      end
      if ok then
        for i = 1, n do
          local e = E[i]
          if not e.shadow or e.out[1] == 1 then
            e.alg('c', e.s, e.limit, e.window_ms, e.burst, e.cost, now, e.max_wait, true, e.out, e.lease)
            first_of[e.key].dirty = true
          end
        end
      end
    else
      for i = 1, n do
        local e = E[i]
        local owner = first_of[e.key]
        -- Like MemoryStore: a key with no state (fresh or expired) has nothing to give back.
        if owner.exists then
          e.alg('r', e.s, e.limit, e.window_ms, e.burst, e.cost, now, 0, true, e.out, e.lease)
          owner.dirty = true
        end
      end
    end

    for i = 1, n do
      local e = E[i]
      if e.dirty then
        local s = e.s
        ${storeState('e.alg', 'e.key', 'e.limit, e.window_ms, e.burst', 'e.out')}
      end
      local o = e.out
      r = r + 1
      if r == 1 then R = {} end
      R[r] = struct.pack('${RESULT_FORMAT}', o[1], o[2], o[3], o[4], o[5], o[6])
    end
  end
end
return table.concat(R)
`

/**
 * The script that decides a batch of requests: the Lua of each algorithm the requests use,
 * then a per-entry dispatch on the algorithm's index in `algorithms` sorted, so a request
 * whose rules use different algorithms is still one EVALSHA, one round trip and one atomic
 * step. Only the algorithms named are included (each costs a closure per call); with none
 * named, all of them.
 *
 * @param algorithms - The algorithms the script must handle.
 * @returns The Lua source.
 */
export function decideScript(algorithms: readonly AlgorithmName[] = SCRIPT_ALGORITHMS): string {
  const names = scriptAlgorithms(algorithms)
  const defs = names.map((a, i) => `local A${i + 1} = ${ALGORITHM_LUA[a].trim()}`)
  const table = `local ALG = { ${names.map((_, i) => `A${i + 1}`).join(', ')} } -- ${names.join(', ')}`
  const lease = names.includes('concurrency') ? [concurrencyPrelude] : []
  return [prelude, ...lease, ...defs, table, main].join('\n')
}

/** `struct` format of a lone request: its header, then its one entry. */
const LONE_FORMAT = `${REQUEST_HEADER_FORMAT}${ENTRY_FORMAT.slice(1)}`

/**
 * The lone request's part of {@link loneScript}: the same ARGV and packed request as the
 * decide script's, unpacked at once, and the decide script's own fragments for the clock, the
 * state and the consume, without its batch loop, its dispatch and its table of answers.
 */
const lone = `
${clock}
local n, m, ${entryLocals('_')} = struct.unpack('${LONE_FORMAT}', ARGV[${ARGV.batch}])
if n ~= 1 or m ~= ${WIRE_MODES.indexOf('c')} then
  return redis.error_reply('floodgate: the lone script takes one consume of one entry')
end
local key = KEYS[1]
${queueFullFlag}
local out = { 0, 0, 0, 0, 0, 0 }
${loadState('key', 'size')}
${consumeOne('alg')}
return ${packOut}
`

/**
 * The script for the most common call: a batch of one request that consumes one entry (a
 * request with one rule, sent alone when nothing else is in flight). It answers and writes
 * exactly what {@link decideScript} does for that call, from the same Lua, at about 4k (5%)
 * fewer Redis instructions per call (see docs/benchmarks.md), which a lone request pays in
 * full as latency.
 *
 * @param algorithm - The entry's algorithm.
 * @returns The Lua source.
 */
export function loneScript(algorithm: AlgorithmName): string {
  const lease = algorithm === 'concurrency' ? [concurrencyPrelude] : []
  return [prelude, ...lease, `local alg = ${ALGORITHM_LUA[algorithm].trim()}`, lone].join('\n')
}

/** The algorithms of a script in the order of their indexes (the packed entries' uint8). */
export function scriptAlgorithms(algorithms: readonly AlgorithmName[]): AlgorithmName[] {
  return [...new Set(algorithms)].sort()
}
