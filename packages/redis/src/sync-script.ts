/**
 * The one script of SyncedStore. It adds batches of units to fleet counters and answers each
 * counter's state; it decides nothing (core's algorithms run locally, in each host).
 *
 * KEYS: fleet counters (hashes), all in one Cluster slot. ARGV[1]: the host's id; then per key:
 * TTL in ms, the run gap in ms, the age in ms of the oldest unit sent, n, and n pairs (seq,
 * units). Each hash holds:
 *
 * - `t`: the fleet's total units (HINCRBYFLOAT, exact for any double);
 * - `s:<host>`: the last batch seq the host applied: a batch sent again after its reply was
 *   lost carries the same seq and is skipped, so units are counted once;
 * - `m`, `rb`, `rt`: Redis TIME of the last push, and the total and time when the current
 *   "run" began (the first push after `gap` ms without one: the key was idle long enough for
 *   any bucket to be full again; backdated by the age of the batch's oldest unit);
 *   `h:<host>` is `rt:units`, the host's own units in that run.
 *
 * Reply per key: the total (as a string), the units the other hosts pushed in the current run
 * (0 when the run is over), and the run's age in ms.
 */
export const SYNC_SCRIPT = `
local tm = redis.call('TIME')
local now = tonumber(tm[1]) * 1000 + math.floor(tonumber(tm[2]) / 1000)
local sfield = 's:' .. ARGV[1]
local hfield = 'h:' .. ARGV[1]
local out = {}
local a = 2
for i = 1, #KEYS do
  local k = KEYS[i]
  local ttl = ARGV[a]
  local gap = tonumber(ARGV[a + 1])
  local age = tonumber(ARGV[a + 2])
  local n = tonumber(ARGV[a + 3])
  a = a + 4
  local f = redis.call('HMGET', k, 't', 'm', 'rb', 'rt', sfield, hfield)
  local total = f[1] or '0'
  local m = tonumber(f[2] or '0')
  local rb = tonumber(f[3] or '0')
  local rt = tonumber(f[4] or '0')
  local last = tonumber(f[5] or '0')
  local own = 0
  if f[6] then
    local ort, units = string.match(f[6], '^([^:]+):(.+)$')
    if tonumber(ort) == rt then own = tonumber(units) end
  end
  local before = tonumber(total)
  local added = 0
  local applied = false
  for _ = 1, n do
    local seq = tonumber(ARGV[a])
    if seq > last then
      total = redis.call('HINCRBYFLOAT', k, 't', ARGV[a + 1])
      added = added + tonumber(ARGV[a + 1])
      last = seq
      applied = true
    end
    a = a + 2
  end
  if applied then
    if now - m > gap then
      rb = before
      rt = now - age
      own = 0
    end
    own = own + added
    m = now
    redis.call('HSET', k, sfield, last, 'm', m, 'rb', rb, 'rt', rt, hfield, rt .. ':' .. own)
  end
  redis.call('PEXPIRE', k, ttl)
  local others = 0
  if m > 0 and now - m <= gap then others = tonumber(total) - rb - own end
  out[#out + 1] = total
  out[#out + 1] = tostring(others)
  out[#out + 1] = tostring(now - rt)
end
return out
`
