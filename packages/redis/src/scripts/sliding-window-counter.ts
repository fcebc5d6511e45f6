/**
 * Lua port of core's `algorithms/sliding-window-counter.ts`: state `s[1]` = windowStartMs,
 * `s[2]` = prevCount, `s[3]` = currCount; `view` and `msUntilFresh` inlined.
 */
export const slidingWindowCounterLua = `
function(op, s, limit, window_ms, burst, cost, now, max_wait, commit, out)
  local w = window_ms
  if op == 'i' then
    if s[3] > 0 then return (s[1] - now) + 2 * w end
    if s[2] > 0 then return (s[1] - now) + w end
    return 0
  end
  -- view
  local stored = s[1]
  local vs = floor(now / w) * w
  local prev, curr
  if stored - now > HORIZON then
    -- dated past the horizon: the clock stepped back that far since, and both are forgotten
    prev, curr = 0, 0
  elseif vs <= stored then
    vs, prev, curr = stored, s[2], s[3]
  elseif vs - stored < 2 * w then
    prev, curr = s[3], 0
  else
    prev, curr = 0, 0
  end
  local el = now - vs
  if not (el > 0) then el = 0 end
  if op == 'r' then
    s[1] = vs
    s[2] = prev
    if curr > cost then s[3] = curr - cost else s[3] = 0 end
    return
  end
  local estimate = (prev * (w - el)) / w + curr
  local after = estimate + cost
  out[3] = limit
  out[2] = 0
  if after <= limit + EPSILON then
    out[1] = 1
    out[6] = 0
    out[4] = units_left((prev * (w - el)) / w + (curr + cost), limit)
    if curr + cost > 0 then out[5] = 2 * w - el elseif prev > 0 then out[5] = w - el else out[5] = 0 end
    if commit then
      s[1] = vs
      s[2] = prev
      s[3] = curr + cost
    end
    return
  end
  out[1] = 0
  out[4] = units_left(estimate, limit)
  if curr > 0 then out[5] = 2 * w - el elseif prev > 0 then out[5] = w - el else out[5] = 0 end
  local room = limit + EPSILON - curr - cost
  if cost > limit + EPSILON then
    out[6] = max(1, out[5], w - el)
  elseif room >= 0 then
    out[6] = max(1, ceil(w - (room * w) / prev - el))
  else
    local next_room = limit + EPSILON - cost
    if curr <= next_room then
      out[6] = w - el
    else
      out[6] = ceil(2 * w - (next_room * w) / curr - el)
    end
  end
end
`
