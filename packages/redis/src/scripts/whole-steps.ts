/**
 * Lua shared by the bucket ports (token bucket, GCRA, leaky bucket), inlined where it is used:
 * a helper function would be a closure allocated on every script call.
 */

/**
 * Lua that snaps the local `v` (a bucket's balance in steps, read back from its stored double)
 * to its whole number of steps when within its rounding, as core's `wholeSteps` does.
 */
export const snapWholeStepsLua = (v: string): string => `
  do
    local below = floor(${v})
    local whole = below
    if ${v} - below >= 0.5 then whole = below + 1 end
    local off = ${v} - whole
    if off < 0 then off = -off end
    if off <= ${v} * WHOLE_SLACK then ${v} = whole end
  end`

/**
 * Lua for a bucket's useful life in ms (the TTL answer, 'i'): the time until state `s`
 * (`factor` steps per stored value) has drained, summed from its own times minus `now` first. A
 * consume that commits returns it too, from the same expression on the same state, so that
 * the script need not call the function again for the TTL.
 */
export const bucketLifeLua = (factor: 'scale' | 'per_ms'): string =>
  `(s[2] - now) + (s[1] * ${factor}) / per_ms`

/**
 * Lua for the start of a bucket's function (core's `drainedSteps`): the TTL answer ('i'), the
 * slack `tol`, and the local `v` set to the state's balance in steps (`factor` per stored
 * value), drained since `s[2]` at `per_ms` steps per millisecond.
 */
export const drainedStepsLua = (v: string, factor: 'scale' | 'per_ms'): string => `
  -- the life left, for the TTL only (rounded up, plus slack): the stored value's own sum is
  -- within a float step of the exact one, and cheaper than reading it back to a whole step
  if op == 'i' then return ${bucketLifeLua(factor)} end
  -- dated past the horizon: the clock stepped back that far since, and the state is forgotten
  if s[2] - now > HORIZON then
    s[1] = 0
    s[2] = now
  end
  local tol = EPSILON * scale
  if tol > 0.25 then tol = 0.25 end
  -- drainedSteps
  local ${v} = 0
  if s[1] > 0 then
    ${v} = s[1] * ${factor}${snapWholeStepsLua(v)}
  end
  if ${v} > 0 then
    local elapsed = now - s[2]
    if elapsed > 0 then
      local drained = elapsed * per_ms
      if drained >= ${v} - tol then ${v} = 0 else ${v} = ${v} - drained end
    end
  end`
