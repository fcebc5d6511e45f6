/**
 * Lua port of core's `algorithms/sliding-window-log.ts`: state `s[1]` = count, `s[2]` = head,
 * `s[3 …]` = a ring of `ceil(limit)` timestamps (core's `RING + i` is `s[3 + i]`); `entry`
 * and `view` (the binary search) inlined.
 */
export const slidingWindowLogLua = `
function(op, s, limit, window_ms, burst, cost, now, max_wait, commit, out)
  local size = max(1, ceil(limit - EPSILON))
  local count = s[1]
  local head = s[2]
  -- A count or head that is no whole place of the ring (not written by Floodgate) indexed
  -- nothing and raised an error: the ring reads as empty.
  if not (count <= size and count % 1 == 0 and head < size and head % 1 == 0) then
    count, head = 0, 0
    s[1], s[2] = 0, 0
  end
  if op == 'i' then
    if count <= 0 then return 0 end
    return (s[3 + ((head + count - 1) % size)] - now) + window_ms
  end
  local units = 0
  if cost > EPSILON then units = ceil(cost - EPSILON) end
  if op == 'r' then
    if count > units then s[1] = count - units else s[1] = 0 end
    return
  end
  -- a newest entry past the horizon: the clock stepped back that far since, and the log is
  -- forgotten (in the state too: an admission that adds nothing then leaves it empty, and the
  -- key is deleted, as core forgets it)
  if count > 0 and s[3 + ((head + count - 1) % size)] - now > HORIZON then
    count = 0
    s[1] = 0
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
  out[3] = size
  out[2] = 0
  if after <= size then
    out[1] = 1
    out[6] = 0
    out[4] = size - after
    if units > 0 then
      out[5] = window_ms
    elseif in_window > 0 then
      out[5] = newest + window_ms - vnow
    else
      out[5] = 0
    end
    if commit and units > 0 then
      local start = (head + first) % size
      for i = 0, units - 1 do s[3 + ((start + in_window + i) % size)] = vnow end
      s[2] = start
      s[1] = after
    end
    return
  end
  out[1] = 0
  out[4] = size - in_window
  if in_window > 0 then out[5] = newest + window_ms - vnow else out[5] = 0 end
  if units > size then
    if in_window > 0 then out[6] = out[5] else out[6] = window_ms end
  else
    local leaving = s[3 + ((head + first + after - size - 1) % size)]
    out[6] = leaving + window_ms - vnow
  end
end
`
