/**
 * Lua port of core's `algorithms/token-bucket.ts`, line for line: same state layout
 * (`s[1]` = used, `s[2]` = lastMs), same operation order, same EPSILON, ceil and floor, so
 * the store conformance suite gets the same answers from Redis as from MemoryStore. Helpers
 * are inlined: every function a script defines is a closure allocated on every call.
 */
export const tokenBucketLua = `
function(op, s, limit, window_ms, burst, cost, now, max_wait, commit, out)
  if op == 'i' then return (s[2] - now) + (s[1] * window_ms) / limit end
  -- usedAt
  local used = s[1]
  if used <= 0 then
    used = 0
  else
    local elapsed = now - s[2]
    if elapsed > 0 then
      local refilled = (elapsed * limit) / window_ms
      if refilled >= used - EPSILON then used = 0 else used = used - refilled end
    end
  end
  if op == 'r' then
    if used > cost then s[1] = used - cost else s[1] = 0 end
    s[2] = max(s[2], now)
    return
  end
  if op == 'f' then
    -- charge: the units go on unconditionally, into debt past the burst
    s[1] = used + cost
    s[2] = max(s[2], now)
    return
  end
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
  out[4] = units_left(after, burst)
  if after > EPSILON then out[5] = ceil(((after - EPSILON) * window_ms) / limit) else out[5] = 0 end
  if commit then
    s[1] = after
    s[2] = max(s[2], now)
  end
end
`
