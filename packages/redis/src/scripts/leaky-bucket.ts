/**
 * Lua port of core's `algorithms/leaky-bucket.ts`: state `s[1]` = level, `s[2]` = lastMs;
 * `levelAt` and `msFor` inlined.
 */
export const leakyBucketLua = `
function(op, s, limit, window_ms, burst, cost, now, max_wait, commit, out)
  if op == 'i' then return (s[2] - now) + (s[1] * window_ms) / limit end
  -- levelAt
  local level = s[1]
  if level <= 0 then
    level = 0
  else
    local elapsed = now - s[2]
    if elapsed > 0 then
      local drained = (elapsed * limit) / window_ms
      if drained >= level - EPSILON then level = 0 else level = level - drained end
    end
  end
  if op == 'r' then
    if level > cost then s[1] = level - cost else s[1] = 0 end
    s[2] = max(s[2], now)
    return
  end
  local after = level + cost
  out[3] = burst
  out[2] = 0
  local overflow = 0
  if after > burst + EPSILON then
    local u = after - burst
    if u > EPSILON then overflow = ceil(((u - EPSILON) * window_ms) / limit) end
  end
  local queue = 0
  if max_wait > 0 and level > EPSILON then queue = ceil(((level - EPSILON) * window_ms) / limit) end
  if overflow == 0 and queue <= max_wait then
    out[1] = 1
    out[2] = queue
    out[6] = 0
    out[4] = units_left(after, burst)
    if after > EPSILON then out[5] = ceil(((after - EPSILON) * window_ms) / limit) else out[5] = 0 end
    if commit then
      s[1] = after
      s[2] = max(s[2], now)
    end
    return
  end
  out[1] = 0
  local shaper = 0
  if max_wait > 0 then shaper = ceil(queue - max_wait) end
  out[6] = max(1, overflow, shaper)
  out[4] = units_left(level, burst)
  if level > EPSILON then out[5] = ceil(((level - EPSILON) * window_ms) / limit) else out[5] = 0 end
end
`
