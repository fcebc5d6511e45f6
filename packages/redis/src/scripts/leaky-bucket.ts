/**
 * Lua port of core's `algorithms/leaky-bucket.ts`: state `s[1]` = level, `s[2]` = lastMs.
 */
export const leakyBucketLua = `
do
  local function level_at(s, p, now)
    local level = s[1]
    if level <= 0 then return 0 end
    local elapsed = now - s[2]
    if elapsed <= 0 then return level end
    local drained = (elapsed * p.limit) / p.windowMs
    if drained >= level - EPSILON then return 0 end
    return level - drained
  end

  local function ms_for(units, p)
    if units > EPSILON then return ceil(((units - EPSILON) * p.windowMs) / p.limit) end
    return 0
  end

  ALGORITHMS['leaky-bucket'] = {
    size = function(p) return 2 end,
    consume = function(s, p, cost, now, max_wait, commit, out)
      local level = level_at(s, p, now)
      local after = level + cost
      out.limit = p.burst
      out.waitMs = 0
      local overflow = 0
      if after > p.burst + EPSILON then overflow = ms_for(after - p.burst, p) end
      local queue = 0
      if max_wait > 0 then queue = ms_for(level, p) end
      if overflow == 0 and queue <= max_wait then
        out.allowed = true
        out.waitMs = queue
        out.retryAfterMs = 0
        out.remaining = max(0, floor(p.burst - after + EPSILON))
        out.resetMs = ms_for(after, p)
        if commit then
          s[1] = after
          s[2] = max(s[2], now)
        end
        return
      end
      out.allowed = false
      local shaper = 0
      if max_wait > 0 then shaper = ceil(queue - max_wait) end
      out.retryAfterMs = max(1, overflow, shaper)
      out.remaining = max(0, floor(p.burst - level + EPSILON))
      out.resetMs = ms_for(level, p)
    end,
    refund = function(s, p, cost, now)
      local level = level_at(s, p, now)
      if level > cost then s[1] = level - cost else s[1] = 0 end
      s[2] = max(s[2], now)
    end,
    idle_at = function(s, p, now)
      return s[2] + (s[1] * p.windowMs) / p.limit
    end,
  }
end
`
