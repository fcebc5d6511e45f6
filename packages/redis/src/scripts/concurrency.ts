/**
 * Lua port of core's `algorithms/concurrency.ts`, with leases. Core keeps one number (slots in
 * flight) and never expires it; in Redis a host that crashes mid-request would leak its slots
 * forever. So the state is a list of leases, oldest first: slots in flight are the units of the
 * leases that have not expired, and the key's TTL runs to the newest lease's expiry. While
 * leases live, the answers are core's exactly; a lease older than `concurrencyLeaseMs` is
 * presumed lost.
 *
 * Each lease is named by the store that took it (`lease`, a positive number; 0: unnamed), and
 * a release that names its lease frees that lease only. A release whose lease is gone (the key
 * was evicted, deleted or reset since) frees nothing: were it to free the oldest lease, one a
 * newer request holds, a lost key would let twice the limit run for as long as traffic keeps
 * the key busy, and each further loss would add another limit. An unnamed release frees the
 * oldest leases first.
 *
 * Stored as pairs of doubles: `(expiry, units)` per lease, followed by `(-name, 0)` when it is
 * named. A host of an earlier version reads a name pair as an expired lease, so it still counts
 * every lease right (and drops the names when it writes); its leases read here as unnamed.
 */
export const concurrencyLua = `
function(op, s, limit, window_ms, burst, cost, now, max_wait, commit, out, lease)
  -- The live leases as (expiry, units, name) triples in L, and their units.
  local L = {}
  local n = 0
  local in_flight = 0
  local len = #s
  local live = false
  for j = 1, len - 1, 2 do
    local a, units = s[j], s[j + 1]
    if a < 0 then
      -- A name pair: it names the lease just before it, when that one is kept.
      if live then L[n] = -a end
      live = false
    elseif a > now and units > 0 then
      L[n + 1] = a
      L[n + 2] = units
      L[n + 3] = 0
      n = n + 3
      in_flight = in_flight + units
      live = true
    else
      live = false
    end
  end
  if op == 'i' then
    local newest = now
    for j = 1, n - 2, 3 do
      if L[j] > newest then newest = L[j] end
    end
    return newest - now
  end
  if op == 'r' then
    if lease and lease > 0 then
      -- Free the named lease only; gone with a lost key, it frees nothing.
      for j = 1, n - 2, 3 do
        if L[j + 2] == lease then
          L[j + 1] = L[j + 1] - cost
          break
        end
      end
    elseif in_flight - cost <= EPSILON then
      -- Snap float residue to zero, as core does, so the key can become idle.
      n = 0
    else
      local left = cost
      for j = 1, n - 2, 3 do
        if left > 0 then
          local take = min(left, L[j + 1])
          L[j + 1] = L[j + 1] - take
          left = left - take
        end
      end
    end
  else
    local after = in_flight + cost
    out[3] = limit
    out[2] = 0
    out[5] = 0
    if after <= limit + EPSILON then
      out[1] = 1
      out[6] = 0
      out[4] = units_left(after, limit)
      if commit then
        L[n + 1] = now + LEASE_MS
        L[n + 2] = cost
        L[n + 3] = lease or 0
        n = n + 3
      end
    else
      out[1] = 0
      out[6] = CONCURRENCY_RETRY_AFTER_MS
      out[4] = units_left(in_flight, limit)
    end
  end
  -- Write the live leases back in place (a lease released to within float residue goes).
  local w = 0
  for j = 1, n - 2, 3 do
    if L[j + 1] > EPSILON then
      s[w + 1] = L[j]
      s[w + 2] = L[j + 1]
      w = w + 2
      if L[j + 2] > 0 then
        s[w + 1] = -L[j + 2]
        s[w + 2] = 0
        w = w + 2
      end
    end
  end
  for j = len, w + 1, -1 do s[j] = nil end
end
`
