/**
 * Lua port of core's `algorithms/sliding-window-counter.ts`: state `s[1]` = windowStartMs,
 * `s[2]` = prevCount, `s[3]` = currCount.
 */
export const slidingWindowCounterLua = `
do
  local function view(s, p, now)
    local w = p.windowMs
    local stored = s[1]
    local start = floor(now / w) * w
    local vs, vp, vc
    if start <= stored then
      vs, vp, vc = stored, s[2], s[3]
    elseif start - stored < 2 * w then
      vs, vp, vc = start, s[3], 0
    else
      vs, vp, vc = start, 0, 0
    end
    local elapsed = now - vs
    if elapsed > 0 then return vs, vp, vc, elapsed end
    return vs, vp, vc, 0
  end

  local function ms_until_fresh(prev, curr, w, elapsed)
    if curr > 0 then return 2 * w - elapsed end
    if prev > 0 then return w - elapsed end
    return 0
  end

  ALGORITHMS['sliding-window-counter'] = {
    size = function(p) return 3 end,
    consume = function(s, p, cost, now, max_wait, commit, out)
      local w = p.windowMs
      local vs, prev, curr, el = view(s, p, now)
      local estimate = (prev * (w - el)) / w + curr
      local after = estimate + cost
      out.limit = p.limit
      out.waitMs = 0
      if after <= p.limit + EPSILON then
        out.allowed = true
        out.retryAfterMs = 0
        out.remaining = max(0, floor(p.limit - after + EPSILON))
        out.resetMs = ms_until_fresh(prev, curr + cost, w, el)
        if commit then
          s[1] = vs
          s[2] = prev
          s[3] = curr + cost
        end
        return
      end
      out.allowed = false
      out.remaining = max(0, floor(p.limit - estimate + EPSILON))
      out.resetMs = ms_until_fresh(prev, curr, w, el)
      local room = p.limit + EPSILON - curr - cost
      if cost > p.limit + EPSILON then
        out.retryAfterMs = max(1, out.resetMs, w - el)
      elseif room >= 0 then
        out.retryAfterMs = max(1, ceil(w - (room * w) / prev - el))
      else
        local next_room = p.limit + EPSILON - cost
        if curr <= next_room then
          out.retryAfterMs = w - el
        else
          out.retryAfterMs = ceil(2 * w - (next_room * w) / curr - el)
        end
      end
    end,
    refund = function(s, p, cost, now)
      local vs, prev, curr = view(s, p, now)
      s[1] = vs
      s[2] = prev
      if curr > cost then s[3] = curr - cost else s[3] = 0 end
    end,
    idle_at = function(s, p, now)
      local start = s[1]
      if s[3] > 0 then return start + 2 * p.windowMs end
      if s[2] > 0 then return start + p.windowMs end
      return 0
    end,
  }
end
`
