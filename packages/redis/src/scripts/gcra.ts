/**
 * Lua port of core's `algorithms/gcra.ts`: state `s[1]` = tatOffsetMs, `s[2]` = anchorMs,
 * same formulas and operation order.
 */
export const gcraLua = `
do
  local function ahead_at(s, now)
    local anchor = s[2]
    local elapsed = 0
    if now > anchor then elapsed = now - anchor end
    local ahead = s[1] - elapsed
    if ahead > 0 then return ahead end
    return 0
  end

  local function ms_for(ahead, p)
    local slack = (EPSILON * p.windowMs) / p.limit
    if ahead > slack then return ceil(ahead - slack) end
    return 0
  end

  ALGORITHMS['gcra'] = {
    size = function(p) return 2 end,
    consume = function(s, p, cost, now, max_wait, commit, out)
      local t = p.windowMs / p.limit
      local ahead = ahead_at(s, now)
      local new_ahead = ahead + cost * t
      local tolerance = (p.burst + EPSILON) * t
      out.limit = p.burst
      if new_ahead <= tolerance then
        out.allowed = true
        out.waitMs = 0
        out.retryAfterMs = 0
      else
        local wait = ceil(new_ahead - tolerance)
        local fits = cost <= p.burst + EPSILON
        if max_wait > 0 and fits and wait <= max_wait then
          out.allowed = true
          out.waitMs = wait
          out.retryAfterMs = 0
        else
          out.allowed = false
          out.waitMs = 0
          if max_wait > 0 and fits then
            out.retryAfterMs = max(1, ceil(wait - max_wait))
          else
            out.retryAfterMs = max(1, wait)
          end
          out.remaining = max(0, floor(p.burst - ahead / t + EPSILON))
          out.resetMs = ms_for(ahead, p)
          return
        end
      end
      out.remaining = max(0, floor(p.burst - new_ahead / t + EPSILON))
      out.resetMs = ms_for(new_ahead, p)
      if commit then
        s[1] = new_ahead
        s[2] = max(s[2], now)
      end
    end,
    refund = function(s, p, cost, now)
      local back = (cost * p.windowMs) / p.limit
      local ahead = ahead_at(s, now)
      if ahead > back then s[1] = ahead - back else s[1] = 0 end
      s[2] = max(s[2], now)
    end,
    idle_at = function(s, p, now)
      return s[2] + s[1]
    end,
  }
end
`
