import { bucketLifeLua, drainedStepsLua, snapWholeStepsLua } from './whole-steps.js'

/**
 * Lua port of core's `algorithms/leaky-bucket.ts`: state `s[1]` = level, `s[2]` = lastMs,
 * counted in steps as the token bucket's port counts them (see it); helpers inlined.
 */
export const leakyBucketLua: string = `
function(op, s, per_ms, scale, burst, cost, now, max_wait, commit, out)
${drainedStepsLua('level', 'scale')}
  if op == 'r' then
    local back = cost * scale
    if level > back then s[1] = (level - back) / scale else s[1] = 0 end
    s[2] = max(s[2], now)
    return
  end
  local cap = burst * scale
  local after = level + cost * scale
  out[3] = burst
  out[2] = 0
  local overflow = 0
  if after > cap + tol then
    local u = after - cap
    if u > tol then overflow = ceil((u - tol) / per_ms) end
  end
  local queue = 0
  if max_wait > 0 and level > tol then queue = ceil((level - tol) / per_ms) end
  if overflow == 0 and queue <= max_wait then
    out[1] = 1
    out[2] = queue
    out[6] = 0
    local value = after / scale
    local next = value * scale${snapWholeStepsLua('next')}
    out[4] = units_left(next, burst, scale, tol)
    if next > tol then out[5] = ceil((next - tol) / per_ms) else out[5] = 0 end
    if commit then
      s[1] = value
      s[2] = max(s[2], now)
      -- the useful life, as 'i' answers it: the store's TTL without a second call
      return ${bucketLifeLua('scale')}
    end
    return
  end
  out[1] = 0
  local shaper = 0
  if max_wait > 0 then shaper = ceil(queue - max_wait) end
  out[6] = max(1, overflow, shaper)
  out[4] = units_left(level, burst, scale, tol)
  if level > tol then out[5] = ceil((level - tol) / per_ms) else out[5] = 0 end
end
`
