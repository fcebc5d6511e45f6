import { STATE_TIME_HORIZON_MS } from '@floodgate/core/algorithms'
import { MAX_TTL_MS } from './key-ttl.js'
import { TTL_SLACK_MS } from './synced/rule-maths.js'

/**
 * The one script of SyncedStore. It adds batches of units to a fleet bucket and answers each
 * bucket's level; it decides nothing (core's algorithms run locally, in each host).
 *
 * KEYS: fleet buckets (hashes), all in one Cluster slot. ARGV[1]: the host's id; ARGV[2]: the
 * newest batch seq the host has issued (no `s:<host>` it wrote is above it); then per key:
 * TTL in ms (the script keeps a bucket in debt longer: until it is fresh again, plus the
 * slack), the emission interval in ms (`windowMs / limit`), the window in ms within which a
 * host that synced counts as active, the burst, how many ms ago the newest unit sent was
 * admitted (a duration, so app and Redis clocks need not agree), n, and n pairs (seq, units).
 * Each hash holds:
 *
 * - `t`: the fleet's total units (HINCRBYFLOAT, exact for any double);
 * - `f`: the fleet's theoretical arrival time in Redis TIME ms (a GCRA with no cap on debt):
 *   every unit pushed moves it one interval later, from now if it lies in the past, so it is
 *   one shared bucket that every host's units drain and Redis's clock refills;
 * - `x`: the most the fleet admitted beyond the capacity in the current run. A bucket that
 *   refills while idle forgives that overshoot, so the next run starts owing it: the fleet's
 *   excess over one bucket stays that of one run instead of adding up run after run;
 * - `s:<host>`: the last batch seq the host applied: a batch sent again after its reply was
 *   lost carries the same seq and is skipped, so units are counted once. A value the host never
 *   wrote (no integer, negative, above the newest seq it issued) reads as absent: taken as
 *   "applied", it would skip every batch of the host on that key for good;
 * - `p:<host>`: Redis TIME of the host's last sync of the key (a push or a read), to count the
 *   hosts sharing the key;
 * - `w`: Redis TIME of the key's last sync by any host. One more than the horizon
 *   (`STATE_TIME_HORIZON_MS`) after now means Redis's clock was stepped back since: the
 *   schedule `f` moves back by as much, so the fleet's level is what it was at that sync instead
 *   of a debt of the whole step (which would hold every host's clients out until the clock
 *   caught up), and hosts whose last sync lies in that future no longer count as sharing it.
 *
 * Reply per key: the total (as a string), the fleet bucket's used units now (its TAT ahead of
 * now over the interval; above the capacity when the fleet is in debt), and the number of hosts
 * that synced it within the active window, counting the caller.
 */
export const SYNC_SCRIPT: string = `
local tm = redis.call('TIME')
local now = tonumber(tm[1]) * 1000 + math.floor(tonumber(tm[2]) / 1000)
local sfield = 's:' .. ARGV[1]
local pfield = 'p:' .. ARGV[1]
local newest = tonumber(ARGV[2])
local out = {}
local a = 3
for i = 1, #KEYS do
  local k = KEYS[i]
  local ttl = ARGV[a]
  local interval = tonumber(ARGV[a + 1])
  local window = tonumber(ARGV[a + 2])
  local burst = tonumber(ARGV[a + 3])
  local since = tonumber(ARGV[a + 4])
  local n = tonumber(ARGV[a + 5])
  a = a + 6
  local f = redis.pcall('HMGET', k, 't', 'f', sfield, 'x', 'w')
  if f.err then
    -- A key of another type (not Floodgate's) would fail the call, and every other key of it,
    -- on every round: replace it with a fresh counter.
    redis.call('DEL', k)
    f = {}
  end
  local total = f[1] or '0'
  local tat = tonumber(f[2] or '0')
  local last = tonumber(f[3] or '0')
  -- The host's own field holds what it wrote: an integer from 0 to the newest seq it issued.
  -- Anything else was written by someone else (an operator, a backup from another database):
  -- read as absent, so the host's next batch counts (it is the one unacked batch of the key)
  -- instead of every batch of the host being skipped, or the whole counter thrown away.
  if not (last and last >= 0 and last <= newest and last == math.floor(last)) then last = 0 end
  local owed = tonumber(f[4] or '0')
  local wrote = tonumber(f[5] or '0')
  -- The total as HINCRBYFLOAT writes it (Lua's tonumber also takes ' 1', '0x10' and digits
  -- past the 5 KiB HINCRBYFLOAT reads, which it refuses).
  local sum = #total < 5000 and string.find(total, '^%-?[%d%.]+[eE]?[%+%-]?%d*$') and tonumber(total)
  -- x - x == 0 holds for finite numbers only (not NaN, not an infinity).
  if not (sum and tat and owed and wrote and sum - sum == 0 and tat - tat == 0
      and owed - owed == 0 and wrote - wrote == 0
      and owed >= 0 and owed * interval <= 2 * ${MAX_TTL_MS} and tat - now <= 2 * ${MAX_TTL_MS}) then
    -- A hash whose fields Floodgate never writes (not numbers, NaN, infinities, a debt or a
    -- schedule past what a counter can live, which made the answer infinite) failed the call,
    -- and every other key of it, on every round, and was never given a TTL: it is replaced
    -- with a fresh counter, like a key of another type.
    redis.call('DEL', k)
    total, tat, owed, wrote = '0', 0, 0, 0
  end
  local stepped = wrote - now > ${STATE_TIME_HORIZON_MS}
  if stepped then tat = tat - (wrote - now) end
  local added = 0
  for _ = 1, n do
    local seq = tonumber(ARGV[a])
    if seq > last then
      total = redis.call('HINCRBYFLOAT', k, 't', ARGV[a + 1])
      added = added + tonumber(ARGV[a + 1])
      last = seq
    end
    a = a + 2
  end
  if added ~= 0 then
    if tat < now then
      -- A new run: the bucket refilled while idle, which forgave the last run's overshoot.
      tat = now + owed * interval
      owed = 0
    end
    tat = tat + added * interval
    -- A debt past what the counter can live is forgotten with it anyway: kept finite, so the
    -- answer stays a number and the next read takes the counter as Floodgate's.
    if tat - now > ${MAX_TTL_MS} then tat = now + ${MAX_TTL_MS} end
    -- Measured when the newest unit was admitted: the refill since then is not forgiveness.
    local over = (tat - now + since) / interval - burst
    if over > owed then owed = over end
    if owed * interval > ${MAX_TTL_MS} then owed = ${MAX_TTL_MS} / interval end
    redis.call('HSET', k, sfield, last, 'f', string.format('%.3f', tat), pfield, now, 'x', tostring(owed), 'w', now)
  elseif stepped then
    redis.call('HSET', k, sfield, last, 'f', string.format('%.3f', tat), pfield, now, 'w', now)
  elseif n > 0 then
    redis.call('HSET', k, sfield, last, pfield, now, 'w', now)
  else
    -- A read: the host serves the key (it admitted units it will send next), so it counts
    -- among the hosts sharing it at once, not only after its first push.
    redis.call('HSET', k, pfield, now, 'w', now)
  end
  -- A bucket in debt (a penalty, the fleet's overshoot) lives until it is fresh again, plus the
  -- slack: hosts in debt admit nothing, so no sync would renew it, and a counter that expired
  -- early would forget the debt for every host that reads it afresh.
  local life = math.ceil(tat - now) + ${TTL_SLACK_MS}
  if not (life < ${MAX_TTL_MS}) then life = ${MAX_TTL_MS} end
  if life > tonumber(ttl) then ttl = string.format('%d', life) end
  redis.call('PEXPIRE', k, ttl)
  local hosts = 1
  local all = redis.call('HGETALL', k)
  for j = 1, #all, 2 do
    local name = all[j]
    if string.sub(name, 1, 2) == 'p:' and name ~= pfield then
      -- A field that is no time (not Floodgate's) counts no host.
      local seen = tonumber(all[j + 1])
      if seen and now - seen <= window and seen - now <= ${STATE_TIME_HORIZON_MS} then
        hosts = hosts + 1
      end
    end
  end
  local ahead = tat - now
  if ahead < 0 then ahead = 0 end
  out[#out + 1] = total
  out[#out + 1] = tostring(ahead / interval)
  out[#out + 1] = tostring(hosts)
end
return out
`
