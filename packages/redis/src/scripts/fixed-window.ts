/**
 * Lua port of core's `algorithms/fixed-window.ts`: state `s[1]` = windowStartMs,
 * `s[2]` = count; core's `view` and `msUntilDrained` are inlined.
 */
export const fixedWindowLua = `
function(op, s, limit, window_ms, burst, cost, now, max_wait, commit, out)
  if op == 'i' then
    local count = s[2]
    if count <= EPSILON then return 0 end
    return (s[1] - now) + ceil((count - EPSILON) / limit) * window_ms
  end
  -- view
  local stored = s[1]
  local count = s[2]
  -- dated past the horizon: the clock stepped back that far since, and the window is forgotten
  if stored - now > HORIZON then
    stored = 0
    count = 0
  end
  local vstart = floor(now / window_ms) * window_ms
  -- A clock that went backwards stays in the stored window, whatever its count.
  if vstart <= stored then
    vstart = stored
    if count <= 0 then count = 0 end
  elseif count <= 0 then
    count = 0
  else
    local windows = floor((vstart - stored) / window_ms)
    local left = count - windows * limit
    if left > 0 then count = left else count = 0 end
  end
  if op == 'r' then
    s[1] = vstart
    if count > cost then s[2] = count - cost else s[2] = 0 end
    return
  end
  local after = count + cost
  out[3] = limit
  if after <= limit + EPSILON then
    out[1] = 1
    out[2] = 0
    out[6] = 0
  else
    local u = after - limit
    local wait = 0
    if u > EPSILON then wait = vstart + ceil((u - EPSILON) / limit) * window_ms - now end
    local fits = cost <= limit + EPSILON
    if max_wait > 0 and fits and wait <= max_wait then
      out[1] = 1
      out[2] = wait
      out[6] = 0
    else
      out[1] = 0
      out[2] = 0
      if max_wait > 0 and fits then
        out[6] = max(1, ceil(wait - max_wait))
      else
        out[6] = max(1, wait)
      end
      out[4] = units_left(count, limit)
      if count > EPSILON then
        out[5] = vstart + ceil((count - EPSILON) / limit) * window_ms - now
      else
        out[5] = 0
      end
      return
    end
  end
  out[4] = units_left(after, limit)
  if after > EPSILON then
    out[5] = vstart + ceil((after - EPSILON) / limit) * window_ms - now
  else
    out[5] = 0
  end
  if commit then
    s[1] = vstart
    s[2] = after
  end
end
`
