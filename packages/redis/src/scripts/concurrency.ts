/**
 * Lua port of core's `algorithms/concurrency.ts`, with leases. Core keeps one number (slots in
 * flight) and never expires it; in Redis a host that crashes mid-request would leak its slots
 * forever. So the state is a list of `[leaseExpiryMs, units]` pairs, oldest first: slots in
 * flight are the units of the leases that have not expired, a release gives back the oldest
 * leases first, and the key's TTL is the newest lease's expiry. While leases live, the
 * answers are core's exactly; a lease older than `leaseMs` is presumed lost.
 */
export const concurrencyLua = `
do
  -- The leases still alive at now, compacted; returns the list and the units in flight.
  local function live(s, now)
    local pairs_ = {}
    local in_flight = 0
    for j = 1, #s - 1, 2 do
      if s[j] > now and s[j + 1] > 0 then
        pairs_[#pairs_ + 1] = s[j]
        pairs_[#pairs_ + 1] = s[j + 1]
        in_flight = in_flight + s[j + 1]
      end
    end
    return pairs_, in_flight
  end

  local function replace(s, t)
    for j = #s, 1, -1 do s[j] = nil end
    for j = 1, #t do s[j] = t[j] end
  end

  ALGORITHMS['concurrency'] = {
    variable = true,
    size = function(p) return 0 end,
    consume = function(s, p, cost, now, max_wait, commit, out)
      local leases, in_flight = live(s, now)
      local after = in_flight + cost
      out.limit = p.limit
      out.waitMs = 0
      out.resetMs = 0
      if after <= p.limit + EPSILON then
        out.allowed = true
        out.retryAfterMs = 0
        out.remaining = max(0, floor(p.limit - after + EPSILON))
        if commit then
          leases[#leases + 1] = now + LEASE_MS
          leases[#leases + 1] = cost
          replace(s, leases)
        end
      else
        out.allowed = false
        out.retryAfterMs = CONCURRENCY_RETRY_AFTER_MS
        out.remaining = max(0, floor(p.limit - in_flight + EPSILON))
      end
    end,
    refund = function(s, p, cost, now)
      local leases, in_flight = live(s, now)
      -- Snap float residue to zero, as core does, so the key can become idle.
      if in_flight - cost <= EPSILON then
        replace(s, {})
        return
      end
      local left = cost
      for j = 1, #leases - 1, 2 do
        if left <= 0 then break end
        local take = min(left, leases[j + 1])
        leases[j + 1] = leases[j + 1] - take
        left = left - take
      end
      local kept = live(leases, now)
      replace(s, kept)
    end,
    idle_at = function(s, p, now)
      local newest = now
      for j = 1, #s - 1, 2 do
        if s[j] > newest and s[j + 1] > 0 then newest = s[j] end
      end
      return newest
    end,
  }
end
`
