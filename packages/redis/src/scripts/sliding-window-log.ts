/**
 * Lua port of core's `algorithms/sliding-window-log.ts`: state `s[1]` = count, `s[2]` = head,
 * `s[3 …]` = a ring of `ceil(limit)` timestamps (core's `RING + i` is `s[3 + i]`); `entry`
 * and `view` (the binary search) inlined.
 */
export const slidingWindowLogLua = `
ALGORITHMS['sliding-window-log'] = function(op, s, limit, window_ms, burst, cost, now, max_wait, commit, out)
  local size = max(1, ceil(limit - EPSILON))
  local count = s[1]
  local head = s[2]
  if op == 'i' then
    if count <= 0 then return 0 end
    return s[3 + ((head + count - 1) % size)] + window_ms
  end
  local units = 0
  if cost > EPSILON then units = ceil(cost - EPSILON) end
  if op == 'r' then
    if count > units then s[1] = count - units else s[1] = 0 end
    return
  end
  -- view: the oldest entry still inside the window ending at max(now, newest)
  local vnow = now
  if count > 0 then
    local newest = s[3 + ((head + count - 1) % size)]
    if not (now > newest) then vnow = newest end
  end
  local cutoff = vnow - window_ms
  local lo, hi = 0, count
  while lo < hi do
    local mid = floor((lo + hi) / 2)
    if s[3 + ((head + mid) % size)] > cutoff then hi = mid else lo = mid + 1 end
  end
  local first = lo
  local in_window = count - first
  local after = in_window + units
  local newest = 0
  if in_window > 0 then newest = s[3 + ((head + count - 1) % size)] end
  out.limit = size
  out.waitMs = 0
  if after <= size then
    out.allowed = true
    out.retryAfterMs = 0
    out.remaining = size - after
    if units > 0 then
      out.resetMs = window_ms
    elseif in_window > 0 then
      out.resetMs = newest + window_ms - vnow
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
  if in_window > 0 then out.resetMs = newest + window_ms - vnow else out.resetMs = 0 end
  if units > size then
    if in_window > 0 then out.retryAfterMs = out.resetMs else out.retryAfterMs = window_ms end
  else
    local leaving = s[3 + ((head + first + after - size - 1) % size)]
    out.retryAfterMs = leaving + window_ms - vnow
  end
end
`
