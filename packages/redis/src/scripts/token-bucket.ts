import { bucketLifeLua, drainedStepsLua, snapWholeStepsLua } from './whole-steps.js'

/**
 * Lua port of core's `stepBucket` (`algorithms/drain.ts`), line for line: same state layout
 * (`s[1]` = the value, `s[2]` = lastMs), same operation order, same slack, ceil and floor, so
 * the store conformance suite gets the same answers from Redis as from MemoryStore. The value
 * is `factor` steps each: units taken (`scale`, the token bucket) or milliseconds of schedule
 * ahead (`per_ms`, GCRA). The rate arrives as core's `exactRate`: `per_ms` steps drain each
 * millisecond and a unit is `scale` steps, so every balance is a whole number of steps.
 * Helpers are inlined: every function a script defines is a closure allocated on every call.
 */
export const stepBucketLua = (factor: 'scale' | 'per_ms'): string => `
function(op, s, per_ms, scale, burst, cost, now, max_wait, commit, out)
${drainedStepsLua('used', factor)}
  if op == 'r' then
    local back = cost * scale
    if used > back then s[1] = (used - back) / ${factor} else s[1] = 0 end
    s[2] = max(s[2], now)
    return
  end
  if op == 'f' then
    -- charge: the units go on unconditionally, into debt past the burst
    s[1] = (used + cost * scale) / ${factor}
    s[2] = max(s[2], now)
    return
  end
  -- takeSteps
  local cap = burst * scale
  local room = cap + tol
  local need = cost * scale
  local after = used + need
  out[3] = burst
  if after <= room then
    out[1] = 1
    out[2] = 0
    out[6] = 0
  else
    local u = after - cap
    local wait = 0
    if u > tol then wait = ceil((u - tol) / per_ms) end
    if max_wait > 0 and wait <= max_wait and need <= room then
      out[1] = 1
      out[2] = wait
      out[6] = 0
    else
      out[1] = 0
      out[2] = 0
      if max_wait > 0 and need <= room then
        out[6] = max(1, ceil(wait - max_wait))
      else
        out[6] = max(1, wait)
      end
      out[4] = units_left(used, burst, scale, tol)
      if used > tol then out[5] = ceil((used - tol) / per_ms) else out[5] = 0 end
      return
    end
  end
  -- what is left is what the next request reads back from the stored value
  local value = after / ${factor}
  local next = value * ${factor}${snapWholeStepsLua('next')}
  out[4] = units_left(next, burst, scale, tol)
  if next > tol then out[5] = ceil((next - tol) / per_ms) else out[5] = 0 end
  if commit then
    s[1] = value
    s[2] = max(s[2], now)
    -- the useful life, as 'i' answers it: the store's TTL without a second call
    return ${bucketLifeLua(factor)}
  end
end
`

/** The token bucket's Lua: its value is units taken, `scale` steps each. */
export const tokenBucketLua: string = stepBucketLua('scale')
