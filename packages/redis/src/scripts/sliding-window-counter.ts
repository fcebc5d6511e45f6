/**
 * Lua port of core's `algorithms/sliding-window-counter.ts`: state `s[1]` = windowStartMs,
 * `s[2]` = prevCount, `s[3]` = currCount; `view` and `msUntilFresh` inlined.
 */
export const slidingWindowCounterLua = `
ALGORITHMS['sliding-window-counter'] = function(op, s, limit, window_ms, burst, cost, now, max_wait, commit, out)
  local w = window_ms
  if op == 'i' then
    if s[3] > 0 then return s[1] + 2 * w end
    if s[2] > 0 then return s[1] + w end
    return 0
  end
  -- view
  local stored = s[1]
  local vs = floor(now / w) * w
  local prev, curr
  if vs <= stored then
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
  out.limit = limit
  out.waitMs = 0
  if after <= limit + EPSILON then
    out.allowed = true
    out.retryAfterMs = 0
    out.remaining = max(0, floor(limit - after + EPSILON))
    if curr + cost > 0 then out.resetMs = 2 * w - el elseif prev > 0 then out.resetMs = w - el else out.resetMs = 0 end
    if commit then
      s[1] = vs
      s[2] = prev
      s[3] = curr + cost
    end
    return
  end
  out.allowed = false
  out.remaining = max(0, floor(limit - estimate + EPSILON))
  if curr > 0 then out.resetMs = 2 * w - el elseif prev > 0 then out.resetMs = w - el else out.resetMs = 0 end
  local room = limit + EPSILON - curr - cost
  if cost > limit + EPSILON then
    out.retryAfterMs = max(1, out.resetMs, w - el)
  elseif room >= 0 then
    out.retryAfterMs = max(1, ceil(w - (room * w) / prev - el))
  else
    local next_room = limit + EPSILON - cost
    if curr <= next_room then
      out.retryAfterMs = w - el
    else
      out.retryAfterMs = ceil(2 * w - (next_room * w) / curr - el)
    end
  end
end
`
