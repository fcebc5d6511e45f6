/**
 * Lua port of core's `algorithms/gcra.ts`: state `s[1]` = tatOffsetMs, `s[2]` = anchorMs,
 * same formulas and operation order, helpers inlined (its `takeUnits` is the token bucket's).
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
  -- unitsAhead: the units the schedule stands for, a whole number when within a few float
  -- steps (relative to the burst) of one
  local used = (ahead * limit) / window_ms
  local whole = floor(used)
  if used - whole >= 0.5 then whole = whole + 1 end
  if math.abs(used - whole) <= burst * 2 ^ -50 then used = whole end
  -- takeUnits: the token bucket's decision on those units
  local after = used + cost
  out[3] = burst
  if after <= burst + EPSILON then
    out[1] = 1
    out[2] = 0
    out[6] = 0
  else
    local u = after - burst
    local wait = 0
    if u > EPSILON then wait = ceil(((u - EPSILON) * window_ms) / limit) end
    if max_wait > 0 and wait <= max_wait and cost <= burst + EPSILON then
      out[1] = 1
      out[2] = wait
      out[6] = 0
    else
      out[1] = 0
      out[2] = 0
      if max_wait > 0 and cost <= burst + EPSILON then
        out[6] = max(1, ceil(wait - max_wait))
      else
        out[6] = max(1, wait)
      end
      out[4] = units_left(used, burst)
      if used > EPSILON then out[5] = ceil(((used - EPSILON) * window_ms) / limit) else out[5] = 0 end
      return
    end
  end
  local tat = (after * window_ms) / limit
  -- what is left is what the next request at this instant reads back from the schedule
  local next = (tat * limit) / window_ms
  whole = floor(next)
  if next - whole >= 0.5 then whole = whole + 1 end
  if math.abs(next - whole) <= burst * 2 ^ -50 then next = whole end
  out[4] = units_left(next, burst)
  if next > EPSILON then out[5] = ceil(((next - EPSILON) * window_ms) / limit) else out[5] = 0 end
  if commit then
    s[1] = tat
    s[2] = max(s[2], now)
  end
end
`
