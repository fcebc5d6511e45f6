import { stepBucketLua } from './token-bucket.js'

/**
 * Lua port of core's `algorithms/gcra.ts`: state `s[1]` = tatOffsetMs, `s[2]` = anchorMs,
 * decided as the token bucket decides (see its port), the schedule ahead counted in steps:
 * one millisecond of it is `per_ms` steps.
 */
export const gcraLua: string = stepBucketLua('per_ms')
