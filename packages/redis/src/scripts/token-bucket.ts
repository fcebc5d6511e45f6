/**
 * Lua port of core's `algorithms/token-bucket.ts`, line for line: same state layout
 * (`s[1]` = used, `s[2]` = lastMs), same operation order, same EPSILON, ceil and floor, so
 * the store conformance suite gets the same answers from Redis as from MemoryStore.
 */
export const tokenBucketLua = `
do
  -- [used, lastMs]
  local function used_at(s, p, now)
    local used = s[1]
    if used <= 0 then return 0 end
    local elapsed = now - s[2]
    if elapsed <= 0 then return used end
    local refilled = (elapsed * p.limit) / p.windowMs
    if refilled >= used - EPSILON then return 0 end
    return used - refilled
  end

  local function ms_for(units, p)
    if units > EPSILON then return ceil(((units - EPSILON) * p.windowMs) / p.limit) end
    return 0
  end

  ALGORITHMS['token-bucket'] = {
    size = function(p) return 2 end,
    consume = function(s, p, cost, now, max_wait, commit, out)
      local used = used_at(s, p, now)
      local after = used + cost
      out.limit = p.burst
      if after <= p.burst + EPSILON then
        out.allowed = true
        out.waitMs = 0
        out.retryAfterMs = 0
      else
        local wait = ms_for(after - p.burst, p)
        if max_wait > 0 and wait <= max_wait and cost <= p.burst + EPSILON then
          out.allowed = true
          out.waitMs = wait
          out.retryAfterMs = 0
        else
          out.allowed = false
          out.waitMs = 0
          if max_wait > 0 and cost <= p.burst + EPSILON then
            out.retryAfterMs = max(1, ceil(wait - max_wait))
          else
            out.retryAfterMs = max(1, wait)
          end
          out.remaining = max(0, floor(p.burst - used + EPSILON))
          out.resetMs = ms_for(used, p)
          return
        end
      end
      out.remaining = max(0, floor(p.burst - after + EPSILON))
      out.resetMs = ms_for(after, p)
      if commit then
        s[1] = after
        s[2] = max(s[2], now)
      end
    end,
    refund = function(s, p, cost, now)
      local used = used_at(s, p, now)
      if used > cost then s[1] = used - cost else s[1] = 0 end
      s[2] = max(s[2], now)
    end,
    idle_at = function(s, p, now)
      return s[2] + (s[1] * p.windowMs) / p.limit
    end,
  }
end
`
