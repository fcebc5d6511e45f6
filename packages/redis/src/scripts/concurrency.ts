/**
 * Lua port of core's `algorithms/concurrency.ts`, with leases. Core keeps one number (slots in
 * flight) and never expires it; in Redis a host that crashes mid-request would leak its slots
 * forever. So the state is a list of `[leaseExpiryMs, units]` pairs, oldest first: slots in
 * flight are the units of the leases that have not expired, a release gives back the oldest
 * leases first, and the key's TTL runs to the newest lease's expiry. While leases live, the
 * answers are core's exactly; a lease older than `concurrencyLeaseMs` is presumed lost.
 */
export const concurrencyLua = `
function(op, s, limit, window_ms, burst, cost, now, max_wait, commit, out)
  -- Keep only the live leases (compacted in place) and count their units.
  local n = 0
  local in_flight = 0
  for j = 1, #s - 1, 2 do
    local expiry, units = s[j], s[j + 1]
    if expiry > now and units > 0 then
      s[n + 1] = expiry
      s[n + 2] = units
      n = n + 2
      in_flight = in_flight + units
    end
  end
  for j = #s, n + 1, -1 do s[j] = nil end
  if op == 'i' then
    local newest = now
    for j = 1, n - 1, 2 do
      if s[j] > newest then newest = s[j] end
    end
    return newest - now
  end
  if op == 'r' then
    -- Snap float residue to zero, as core does, so the key can become idle.
    if in_flight - cost <= EPSILON then
      for j = n, 1, -1 do s[j] = nil end
      return
    end
    local left = cost
    local k = 0
    for j = 1, n - 1, 2 do
      local units = s[j + 1]
      if left > 0 then
        local take = min(left, units)
        units = units - take
        left = left - take
      end
      if units > 0 then
        s[k + 1] = s[j]
        s[k + 2] = units
        k = k + 2
      end
    end
    for j = n, k + 1, -1 do s[j] = nil end
    return
  end
  local after = in_flight + cost
  out[3] = limit
  out[2] = 0
  out[5] = 0
  if after <= limit + EPSILON then
    out[1] = 1
    out[6] = 0
    out[4] = units_left(after, limit)
    if commit then
      s[n + 1] = now + LEASE_MS
      s[n + 2] = cost
    end
  else
    out[1] = 0
    out[6] = CONCURRENCY_RETRY_AFTER_MS
    out[4] = units_left(in_flight, limit)
  end
end
`
