/**
 * The one script of SyncedStore. It adds batches of units to fleet counters and answers each
 * counter's total; it decides nothing (core's algorithms run locally, in each host).
 *
 * KEYS: fleet counters (hashes), all in one Cluster slot. ARGV[1]: the host's id; then per key:
 * TTL in ms, n, and n pairs (seq, units). Each hash holds `t`, the fleet's total, and per host
 * `s:<host id>`, the last batch seq it applied: a batch sent again after its reply was lost
 * carries the same seq and is skipped, so units are counted once. Replies are strings (the
 * total as HINCRBYFLOAT prints it), exact for any double.
 */
export const SYNC_SCRIPT = `
local host = 's:' .. ARGV[1]
local out = {}
local a = 2
for i = 1, #KEYS do
  local k = KEYS[i]
  local ttl = ARGV[a]
  local n = tonumber(ARGV[a + 1])
  a = a + 2
  local total = false
  if n > 0 then
    local last = tonumber(redis.call('HGET', k, host) or '0')
    for _ = 1, n do
      local seq = tonumber(ARGV[a])
      if seq > last then
        total = redis.call('HINCRBYFLOAT', k, 't', ARGV[a + 1])
        last = seq
      end
      a = a + 2
    end
    redis.call('HSET', k, host, last)
  end
  if not total then total = redis.call('HGET', k, 't') or '0' end
  redis.call('PEXPIRE', k, ttl)
  out[i] = total
end
return out
`
