/**
 * Lua port of core's `algorithms/fixed-window.ts`: state `s[1]` = windowStartMs,
 * `s[2]` = count; core's scratch `view` variables are returned as values here.
 */
export const fixedWindowLua = `
do
  local function view(s, p, now)
    local stored = s[1]
    local count = s[2]
    local start = floor(now / p.windowMs) * p.windowMs
    if count <= 0 then
      return start, 0
    elseif start > stored then
      local windows = floor((start - stored) / p.windowMs)
      local left = count - windows * p.limit
      if left > 0 then return start, left end
      return start, 0
    end
    return stored, count
  end

  local function ms_until_drained(units, p, now, vstart)
    if units <= EPSILON then return 0 end
    local windows = ceil((units - EPSILON) / p.limit)
    return vstart + windows * p.windowMs - now
  end

  ALGORITHMS['fixed-window'] = {
    size = function(p) return 2 end,
    consume = function(s, p, cost, now, max_wait, commit, out)
      local vstart, count = view(s, p, now)
      local after = count + cost
      out.limit = p.limit
      if after <= p.limit + EPSILON then
        out.allowed = true
        out.waitMs = 0
        out.retryAfterMs = 0
      else
        local wait = ms_until_drained(after - p.limit, p, now, vstart)
        local fits = cost <= p.limit + EPSILON
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
          out.remaining = max(0, floor(p.limit - count + EPSILON))
          out.resetMs = ms_until_drained(count, p, now, vstart)
          return
        end
      end
      out.remaining = max(0, floor(p.limit - after + EPSILON))
      out.resetMs = ms_until_drained(after, p, now, vstart)
      if commit then
        s[1] = vstart
        s[2] = after
      end
    end,
    refund = function(s, p, cost, now)
      local vstart, count = view(s, p, now)
      s[1] = vstart
      if count > cost then s[2] = count - cost else s[2] = 0 end
    end,
    idle_at = function(s, p, now)
      local count = s[2]
      if count <= EPSILON then return 0 end
      return s[1] + ceil((count - EPSILON) / p.limit) * p.windowMs
    end,
  }
end
`
