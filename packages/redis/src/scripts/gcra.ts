/**
 * Lua port of core's `algorithms/gcra.ts`: state `s[1]` = tatOffsetMs, `s[2]` = anchorMs,
 * same formulas and operation order, helpers inlined.
 */
export const gcraLua = `
function(op, s, limit, window_ms, burst, cost, now, max_wait, commit, out)
  if op == 'i' then return (s[2] - now) + s[1] end
  -- aheadAt
  local anchor = s[2]
  local elapsed = 0
  if now > anchor then elapsed = now - anchor end
  local ahead = s[1] - elapsed
  if not (ahead > 0) then ahead = 0 end
  if op == 'r' then
    local back = (cost * window_ms) / limit
    if ahead > back then s[1] = ahead - back else s[1] = 0 end
    s[2] = max(s[2], now)
    return
  end
  if op == 'f' then
    -- charge: the units go on unconditionally, into debt past the burst
    s[1] = ahead + (cost * window_ms) / limit
    s[2] = max(s[2], now)
    return
  end
  local t = window_ms / limit
  local new_ahead = ahead + cost * t
  local tolerance = (burst + EPSILON) * t
  local slack = (EPSILON * window_ms) / limit
  out[3] = burst
  if new_ahead <= tolerance then
    out[1] = 1
    out[2] = 0
    out[6] = 0
  else
    local wait = ceil(new_ahead - tolerance)
    local fits = cost <= burst + EPSILON
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
      out[4] = units_left(ahead, burst, t)
      if ahead > slack then out[5] = ceil(ahead - slack) else out[5] = 0 end
      return
    end
  end
  out[4] = units_left(new_ahead, burst, t)
  if new_ahead > slack then out[5] = ceil(new_ahead - slack) else out[5] = 0 end
  if commit then
    s[1] = new_ahead
    s[2] = max(s[2], now)
  end
end
`
