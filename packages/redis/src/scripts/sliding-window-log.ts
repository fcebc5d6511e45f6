/**
 * Lua port of core's `algorithms/sliding-window-log.ts`: state `s[1]` = count, `s[2]` = head,
 * `s[3 …]` = a ring of `ceil(limit)` timestamps (core's offset `RING + i` is `s[3 + i]`).
 */
export const slidingWindowLogLua = `
do
  local function ring_size(p) return max(1, ceil(p.limit - EPSILON)) end
  local function entry(s, size, head, i) return s[3 + ((head + i) % size)] end

  local function view(s, p, size, now)
    local count = s[1]
    local head = s[2]
    local newest = now
    if count > 0 then newest = entry(s, size, head, count - 1) end
    local vnow = newest
    if now > newest then vnow = now end
    local cutoff = vnow - p.windowMs
    local lo, hi = 0, count
    while lo < hi do
      local mid = floor((lo + hi) / 2)
      if entry(s, size, head, mid) > cutoff then hi = mid else lo = mid + 1 end
    end
    return vnow, lo
  end

  ALGORITHMS['sliding-window-log'] = {
    size = function(p) return ring_size(p) + 2 end,
    consume = function(s, p, cost, now, max_wait, commit, out)
      local size = ring_size(p)
      local vnow, first = view(s, p, size, now)
      local count = s[1]
      local head = s[2]
      local in_window = count - first
      local units = 0
      if cost > EPSILON then units = ceil(cost - EPSILON) end
      local after = in_window + units
      local newest = 0
      if in_window > 0 then newest = entry(s, size, head, count - 1) end
      out.limit = size
      out.waitMs = 0
      if after <= size then
        out.allowed = true
        out.retryAfterMs = 0
        out.remaining = size - after
        if units > 0 then
          out.resetMs = p.windowMs
        elseif in_window > 0 then
          out.resetMs = newest + p.windowMs - vnow
        else
          out.resetMs = 0
        end
        if commit and units > 0 then
          local start = (head + first) % size
          for i = 0, units - 1 do s[3 + ((start + in_window + i) % size)] = vnow end
          s[2] = start
          s[1] = after
        end
        return
      end
      out.allowed = false
      out.remaining = size - in_window
      if in_window > 0 then out.resetMs = newest + p.windowMs - vnow else out.resetMs = 0 end
      if units > size then
        if in_window > 0 then out.retryAfterMs = out.resetMs else out.retryAfterMs = p.windowMs end
      else
        local leaving = entry(s, size, head, first + after - size - 1)
        out.retryAfterMs = leaving + p.windowMs - vnow
      end
    end,
    refund = function(s, p, cost, now)
      local count = s[1]
      local units = 0
      if cost > EPSILON then units = ceil(cost - EPSILON) end
      if count > units then s[1] = count - units else s[1] = 0 end
    end,
    idle_at = function(s, p, now)
      local count = s[1]
      if count <= 0 then return 0 end
      return entry(s, ring_size(p), s[2], count - 1) + p.windowMs
    end,
  }
end
`
