import {
  CONCURRENCY_RETRY_AFTER_MS,
  STATE_TIME_HORIZON_MS,
  type AlgorithmName,
} from '@floodgate/core/algorithms'
import { concurrencyLua } from './concurrency.js'
import { fixedWindowLua } from './fixed-window.js'
import { gcraLua } from './gcra.js'
import { leakyBucketLua } from './leaky-bucket.js'
import { slidingWindowCounterLua } from './sliding-window-counter.js'
import { slidingWindowLogLua } from './sliding-window-log.js'
import { tokenBucketLua } from './token-bucket.js'
import { MAX_TTL_MS } from '../key-ttl.js'
import {
  ARGV,
  ENTRY_BYTES,
  ENTRY_FIELDS,
  ENTRY_FORMAT,
  REQUEST_HEADER_BYTES,
  REQUEST_HEADER_FORMAT,
  REPEAT_STEP,
  RESULT_FORMAT,
  SHORT_RESULT_FORMAT,
  WIRE_MODES,
} from '../wire-format.js'

/**
 * Each algorithm's Lua: a function expression `(op, s, limit, window_ms, burst, cost, now,
 * max_wait, commit, out)` (concurrency takes the entry's `lease` name too) that writes its answer into the array `out` (allowed 1/0, waitMs,
 * limit, remaining, resetMs, retryAfterMs), which doubles as the script's reply. The buckets
 * receive their rate as core's `exactRate` (see `encodeRequests`) in `limit` and `window_ms`.
 * A bucket's consume that commits also returns the state's useful life, what 'i' would answer
 * (the others return nothing, and the script asks 'i').
 */
const ALGORITHM_LUA: Readonly<Record<AlgorithmName, string>> = {
  'token-bucket': tokenBucketLua,
  gcra: gcraLua,
  'fixed-window': fixedWindowLua,
  'sliding-window-log': slidingWindowLogLua,
  'sliding-window-counter': slidingWindowCounterLua,
  'leaky-bucket': leakyBucketLua,
  concurrency: concurrencyLua,
}

/** Names of the algorithms the scripts implement. */
export const SCRIPT_ALGORITHMS: readonly AlgorithmName[] = Object.keys(
  ALGORITHM_LUA,
) as AlgorithmName[]

/**
 * The body of core's `unitsLeft` in Lua, on the locals `used`, `capacity`, `step`, `tol` (the
 * last two may be nil): `answer(n)` is the Lua that answers `n` and leaves (a `return` in the
 * prelude's function, a `break` out of a block where it runs inline). One text for both, so
 * the two cannot differ.
 */
const unitsLeftBody = (answer: (n: string) => string): string => `
  step = step or 1
  tol = tol or EPSILON
  local room = capacity * step + tol
  local n = floor((room - used) / step)
  if not (n > 0) then n = 0 end
  if used + (n + 1) * step > room and (n == 0 or used + n * step <= room) then ${answer('n')} end
  for _ = 1, 2 do
    if n > 0 and used + n * step > room then n = n - 1 else break end
  end
  for _ = 1, 2 do
    if used + (n + 1) * step <= room then n = n + 1 else break end
  end
  if n > 0 and used + n * step <= room then ${answer('n')} end
  ${answer('0')}`

/**
 * Lua that sets `target` to `units_left(args)` in place: the function's body in a block of its
 * own, its parameters bound to `args` (a Lua argument list; the ones left out are nil).
 */
const unitsLeftInline = (target: string, args: string): string => `do
    local used, capacity, step, tol = ${args}
    repeat${unitsLeftBody((n) => `${target} = ${n} break`)}
    until true
  end`

/**
 * `text` with each statement `<target> = units_left(<args>)` (the whole of its line but the
 * indent, as the algorithms write it) replaced by {@link unitsLeftInline}. The arguments are
 * read up to the call's closing parenthesis.
 */
function inlineUnitsLeft(text: string): string {
  return text.replace(
    /^( *)(\w+) = units_left\((.*)\)$/gm,
    (line, indent: string, target: string, args: string) => {
      let depth = 0
      for (const c of args) {
        if (c === '(') depth++
        else if (c === ')' && --depth < 0) throw new Error(`units_left: cannot read ${line.trim()}`)
      }
      if (depth !== 0) throw new Error(`units_left: cannot read ${line.trim()}`)
      return indent + unitsLeftInline(target, args)
    },
  )
}

/** The constants and helpers every script's Lua reads, `units_left` as a function or not. */
const preludeOf = (unitsLeft: 'function' | 'inline'): string => `
local EPSILON = 1e-9
-- core's STATE_TIME_HORIZON_MS: a state dated further ahead of now is forgotten
local HORIZON = ${STATE_TIME_HORIZON_MS}
local floor, ceil, max, min = math.floor, math.ceil, math.max, math.min
local HUGE = math.huge
-- The longest TTL set (2^62 ms): Redis refuses an expiry past 2^63 - 1 ms.
local MAX_TTL = ${MAX_TTL_MS}${
  unitsLeft === 'inline'
    ? ''
    : `
-- core's unitsLeft: the largest whole n >= 0 with used + n * step <= capacity * step + tol
-- (the admission test; step 1, or the buckets' steps per unit); the estimate is confirmed by
-- the test, and moved by at most two steps each way when off.
local function units_left(used, capacity, step, tol)${unitsLeftBody((n) => `return ${n}`)}
end`
}
-- core's wholeSteps: the relative rounding a bucket's balance read back may carry
local WHOLE_SLACK = 2 ^ -51
`

const prelude = preludeOf('function')

/** What only the concurrency algorithm reads: parsing the lease costs every other call. */
const concurrencyPrelude = `
local CONCURRENCY_RETRY_AFTER_MS = ${CONCURRENCY_RETRY_AFTER_MS}
local LEASE_MS = tonumber(ARGV[${ARGV.leaseMs}])
`

/**
 * Lua that reads `key`'s value into `raw` with a GET (the lone script's one read): the string
 * it holds, or false.
 */
const getRaw = (key: string): string => `
  -- A key of another type (a hash, a list: not Floodgate's) reads as fresh, and the SET or
  -- DEL that follows replaces it. An error here would fail every request of the batch open,
  -- other clients' included.
  local raw = redis.pcall('GET', ${key})
  if type(raw) == 'table' then raw = false end`

/**
 * Lua that reads the value of the key at slot `f` into `raw` as the call's earlier requests
 * left it: `got` starts as the call's one MGET (which answers false for a key of another
 * type, like a missing one) and takes every write the call defers (see {@link batchWrites}).
 */
const cachedRaw = 'local raw = got[f]'

/**
 * Lua that decodes `raw` (see {@link getRaw}, {@link cachedRaw}) into a table `s` of `size`
 * doubles (0: variable), all zero when there is no value or one of the wrong size. Tables
 * are built at their final size: growing one element at a time rehashes. With `reuse`, a
 * state of a fixed size 2 or 3 is decoded into the script's one table of that size (`S2`,
 * `S3`) instead of a new one: for a request whose state is packed before the next request is
 * read. A variable-size state (concurrency leases, which the algorithm grows and shrinks)
 * always gets a table of its own.
 *
 * A value of the right size holding numbers Floodgate never writes reads as fresh too: any
 * NaN or infinity, and in a state of a fixed size (times, counts, balances) any number below
 * 0 (only a concurrency lease's name is negative). Computed on, such a state answered NaN or
 * Infinity (the client passed unjudged on every request, and a refusal left the value there
 * for good), admitted without bound (a negative count), or raised a Lua error that failed
 * every request of the batch open (a sliding-window-log state indexed by NaN).
 */
/**
 * Lua true when every one of `names` (doubles read from a fixed-size state) is a number
 * Floodgate writes there: not NaN, not an infinity, not below 0. One test for the general
 * script's `loadState` and the inlined lone script.
 */
const saneDoubles = (names: readonly string[]): string =>
  names.map((x) => `${x} >= 0 and ${x} < HUGE`).join(' and ')

const loadState = (read: string, size: string, reuse = false): string => `
  local s
  local size = ${size}
  ${read}${reuse ? '\n  local S2, S3 = S2, S3\n  if size == 0 then S2, S3 = nil, nil end' : ''}
  -- Variable-size states (concurrency leases) take whatever whole doubles are stored.
  local fixed = size > 0
  if raw and not fixed then size = floor(#raw / 8) end
  if raw and #raw == size * 8 then
    -- A number Floodgate never writes (NaN, an infinity; below 0 in a fixed-size state) makes
    -- the whole state fresh.
    if size == 2 then
      s = ${reuse ? 'S2 or { 0, 0 }' : '{ 0, 0 }'}
      local a, b = struct.unpack('<dd', raw)
      if ${saneDoubles(['a', 'b'])} then s[1], s[2] = a, b else s[1], s[2] = 0, 0 end
    elseif size == 3 then
      s = ${reuse ? 'S3 or { 0, 0, 0 }' : '{ 0, 0, 0 }'}
      local a, b, c = struct.unpack('<ddd', raw)
      if ${saneDoubles(['a', 'b', 'c'])} then
        s[1], s[2], s[3] = a, b, c
      else
        s[1], s[2], s[3] = 0, 0, 0
      end
    else
      s = {}
      local pos, sane, x = 1, true, 0
      for j = 1, size do
        x, pos = struct.unpack('<d', raw, pos)
        s[j] = x
        if not (x - x == 0) or (fixed and x < 0) then sane = false end
      end
      if not sane then for j = 1, size do s[j] = 0 end end
    end
  elseif size == 2 then
    ${reuse ? 's = S2 or { 0, 0 }; s[1], s[2] = 0, 0' : 's = { 0, 0 }'}
  elseif size == 3 then
    ${reuse ? 's = S3 or { 0, 0, 0 }; s[1], s[2], s[3] = 0, 0, 0' : 's = { 0, 0, 0 }'}
  else
    s = {}
    for j = 1, size do s[j] = 0 end
  end`

/**
 * How a script writes a state back: Lua that stores `packed` for `px` ms, Lua that deletes.
 * `PSETEX` is `SET … PX` without the option parsing (1k instructions fewer per write).
 */
interface StateWrites {
  readonly set: string
  readonly del: string
}

/** The lone script writes its one key at once (`px`: the TTL string, see {@link ttlString}). */
const directWrites = (key: string): StateWrites => ({
  set: `redis.call('PSETEX', ${key}, px, packed)`,
  del: `redis.call('DEL', ${key})`,
})

/**
 * The general script defers its writes to the end of the call (see `flushWrites`): a key that
 * several requests of a batch touch is written once, with what the last one left. Redis runs
 * the script atomically, so nothing but the call itself could see the states in between, and
 * the call reads them from `got`.
 */
const batchWrites = (f: string): StateWrites => ({
  set: `got[${f}] = packed; PX[${f}] = px`,
  del: `got[${f}] = false; PX[${f}] = false`,
})

/** The entry's fields as Lua locals, from the wire format's one list; shadow's is named. */
const entryLocals = (shadow: string): string =>
  ENTRY_FIELDS.map((f) => (f.name === 'shadow' ? shadow : f.name)).join(', ')

/** Lua that reads the sign of `max_wait`: negative says the client's queue is full. */
const queueFullFlag = `local full = max_wait < 0
  if full then max_wait = -max_wait end`

/**
 * Lua that takes the next key, advancing the key index `k`: its slot `f`, where it first
 * appears in KEYS (got and PX are kept there), and with `named` the key itself, `key`. When
 * Node said the call's keys all differ (its first request's entry count negated, see
 * `encodeRequests`) a key's slot is its place, and the table of first places (`first`, a
 * string-keyed table grown key by key: 0.6-1.2k Redis instructions a decision) is neither made
 * nor read.
 */
const keySlotOf = (named: boolean): string => `k = k + 1${
  named
    ? `
  local key = KEYS[k]`
    : ''
}
  local f = k
  if first then
    ${named ? '' : 'local key = KEYS[k]\n    '}f = first[key]
    if not f then
      f = k
      first[key] = k
    end
  end`

/** {@link keySlotOf} without the key: the paths that keep no table by key. */
const keySlot = keySlotOf(false)

/**
 * Lua that takes an entry already unpacked into locals (`ai`, its numbers): its algorithm
 * `alg`, its key's slot `f` (and with `named` the key, `key`; see {@link keySlotOf}),
 * advancing the key index `k`. A negative `max_wait` says the client's queue is full
 * (`queueFull`): `full` is set and `max_wait` made positive.
 */
const takeEntryOf = (named: boolean): string => `
  local alg = ALG[ai]
  if not alg then return redis.error_reply('floodgate: unknown algorithm ' .. ai) end
  ${keySlotOf(named)}
  ${queueFullFlag}`

/** {@link takeEntryOf} without the key. */
const takeEntry = takeEntryOf(false)

/**
 * Lua that reads the next packed entry at `pos` into locals (`alg`, its numbers, its key's
 * slot `f`, and with `named` its `key`; see {@link takeEntryOf}), advancing `pos`; the shadow
 * flag goes to the local named `shadow`. The locals and the unpack format come from the wire
 * format's one list of entry fields.
 */
const readEntry = (shadow: string, named = false): string => {
  const locals = entryLocals(shadow)
  return `
  local ${locals}
  ${locals}, pos = struct.unpack('${ENTRY_FORMAT}', blob, pos)
  ${takeEntryOf(named)}`
}

/**
 * The Lua of an answer's field `i` (1-based): `t[i]` of a table `t`, or the local `<t>i` of an
 * answer held in six locals (`{ locals: 'o' }`, the inlined lone script's).
 */
type Answer = string | { readonly locals: string }
const field = (a: Answer, i: number): string =>
  typeof a === 'string' ? `${a}[${i}]` : `${a.locals}${i}`

/** Lua mirroring core's `refuseReservation`: an admission that would wait becomes a refusal. */
const refuseReservation = (out: Answer): string => {
  const [o1, o2, o6] = [field(out, 1), field(out, 2), field(out, 6)]
  return `if ${o1} == 1 and ${o2} > 0 then ${o1} = 0; ${o6} = max(1, ${o2}); ${o2} = 0 end`
}

/**
 * Where a TTL and its string are kept for the next write (Lua lvalues, see {@link ttlString});
 * with `apart`, where a request's later entries keep theirs (`first` is its first entry's).
 */
interface PxCache {
  readonly ttl: string
  readonly text: string
  readonly apart?: { readonly first: string; readonly ttl: string; readonly text: string }
}

/** The call's last TTL written. */
const TTL_CACHE: PxCache = { ttl: 'last_px', text: 'last_pxs' }

/**
 * In a request of several entries (`j`: the entry's place), the first entry's last TTL apart
 * from the others': two rules live apart, and the call's one last TTL would be the other
 * rule's every time.
 */
const ENTRY_TTL_CACHE: PxCache = {
  ...TTL_CACHE,
  apart: { first: 'j == 1', ttl: 'next_px', text: 'next_pxs' },
}

/**
 * Lua that sets `px` to the TTL string of a state whose life rounded up is `ttl`. Redis writes
 * a number argument with '%.17g' (glibc's float printer: a third of the cost of the SET, and
 * "1e+17" from 10^17 on, which PX refuses): the TTL goes as an integer string, capped where
 * Redis would refuse the expiry (a debt of Number.MAX_SAFE_INTEGER units, a burst that takes
 * longer than that to refill). With a `cache` (see {@link TTL_CACHE}), a TTL equal to the one
 * cached reuses its string: states of one rule at one now often live alike.
 */
const ttlString = (cache: PxCache | false): string => {
  const cached = ({ ttl, text }: { readonly ttl: string; readonly text: string }): string => `
    if px == ${ttl} then
      px = ${text}
    else
      ${ttl} = px
      px = string.format('%d', px)
      ${text} = px
    end`
  const apart = cache && cache.apart
  return `local px = ttl + slack
    if not (px < MAX_TTL) then px = MAX_TTL end${
      !cache
        ? `
    px = string.format('%d', px)`
        : apart
          ? `
    if ${apart.first} then${cached(cache)}
    else${cached(apart)}
    end`
          : cached(cache)
    }`
}

/**
 * Lua that writes state `s` back (`writes`) with a TTL of its useful life (the algorithm's
 * idle time), or deletes it when it is already fresh.
 */
const storeState = (
  alg: string,
  params: string,
  out: string,
  writes: StateWrites,
  life?: string,
): string => `
  -- 'i' answers the ms from now until the state is fresh again, summed from the state's own
  -- times minus now first: a life of a few nanoseconds added to an epoch in ms would round away
  -- and delete a state MemoryStore still holds.${life === undefined ? '' : ` The buckets' commit returned it already (\`${life}\`).`}
  local ttl = ceil(${life === undefined ? '' : `${life} or `}${alg}('i', s, ${params}, 0, now, 0, false, ${out}))
  if not (ttl > 0) then
    -- Already equal to the fresh state: nothing worth keeping. A NaN life (a state of the right
    -- size that Floodgate did not write) is read as fresh, like a state of the wrong size.
    ${writes.del}
  else
    local size = #s
    local packed
    if size == 2 then
      packed = struct.pack('<dd', s[1], s[2])
    elseif size == 3 then
      packed = struct.pack('<ddd', s[1], s[2], s[3])
    else
      local parts = {}
      for j = 1, size do parts[j] = struct.pack('<d', s[j]) end
      packed = table.concat(parts)
    end
    ${ttlString(TTL_CACHE)}
    ${writes.set}
  end`

/** Lua that sets `now`: Redis's clock, or the caller's when ARGV carries one. */
const clock = `
local now
if ARGV[${ARGV.now}] == '' then
  -- Redis is the clock: every app host sees the same time (effects are replicated, so
  -- replicas and AOF get the resulting SETs, never a re-run of TIME).
  local t = redis.call('TIME')
  now = tonumber(t[1]) * 1000 + floor(tonumber(t[2]) / 1000)
else
  now = tonumber(ARGV[${ARGV.now}])
end
local slack = tonumber(ARGV[${ARGV.ttlSlack}])
-- The last TTL written, and its string (see storeState).
local last_px, last_pxs`

/**
 * Lua that consumes a one-entry request (the entry's locals, state `s` loaded, `out` zeroed)
 * with `alg`, and writes the state back when it admitted: the algorithm's own commit is
 * all-or-nothing (a refusal writes nothing), shadow or not.
 */
const consumeOne = (alg: string, writes: StateWrites): string => `
    local life
    if full then
      -- The client's queue is full: record only an admission that does not wait.
      ${alg}('c', s, limit, window_ms, burst, cost, now, max_wait, false, out, lease)
      ${refuseReservation('out')}
      if out[1] == 1 then life = ${alg}('c', s, limit, window_ms, burst, cost, now, max_wait, true, out, lease) end
    else
      life = ${alg}('c', s, limit, window_ms, burst, cost, now, max_wait, true, out, lease)
    end
    if out[1] == 1 then
      ${storeState(alg, 'limit, window_ms, burst', 'out', writes, 'life')}
    end`

/** The locals of a request's header and its first entry, as the general script unpacks them. */
const requestLocals = `n, m, ${entryLocals('shadow')}`

/** Where the general script keeps {@link requestLocals} of the request before. */
const savedLocals = requestLocals
  .split(', ')
  .map((x) => `p_${x}`)
  .join(', ')

/** Lua that makes the table path's answer table and state tables (see {@link mainOf}). */
const TABLE_PATH_TABLES = '{ 0, 0, 0, 0, 0, 0 }, { 0, 0 }, { 0, 0, 0 }'

/** `struct` format of a request's header and its first entry (a lone request: its one entry). */
const LONE_FORMAT = `${REQUEST_HEADER_FORMAT}${ENTRY_FORMAT.slice(1)}`

/** Keys per MGET: `unpack` fails past the Lua stack's few thousand slots. */
const MGET_KEYS = 1000

/** Lua that makes the writes the general script deferred, in the order of the keys' slots. */
const flushWrites = `
for f = 1, nk do
  local px = PX[f]
  if px then
    redis.call('PSETEX', KEYS[f], px, got[f])
  elseif px == false then
    redis.call('DEL', KEYS[f])
  end
end`

/**
 * Lua that packs the result table `o` as one entry's result, for an entry whose packed burst
 * is the Lua `burst`. A duration or count that is not finite is MAX_TTL: a state of extreme
 * numbers (a count near 1e308 in someone else's bytes) overflows the arithmetic to Infinity or
 * NaN, which core refuses as an answer, so the client would pass unjudged on every request;
 * capped, it is refused instead. (`x - x == 0` holds for finite numbers only.)
 *
 * The common answer, an admission with no wait whose limit is the entry's burst, is packed
 * short (see `SHORT_RESULT_FORMAT` in wire-format.ts): the negated remaining, then resetMs.
 * Each double packed costs about 450 Redis instructions. The test picks exactly the answers
 * the short form carries bit for bit: `1 / x == HUGE` holds for +0 only (not -0), `1 / x > 0`
 * for +0 up to a finite x (its negation then has the sign bit set), and a limit above 0 equal
 * to the burst has the burst's bits.
 */
const packResult = (o: Answer, burst: string): string => {
  const finite = (i: number): string => {
    const x = field(o, i)
    return `(${x} - ${x} == 0 and ${x}) or MAX_TTL`
  }
  const sum = [2, 4, 5, 6].map((i) => field(o, i)).join(' + ')
  const plain = [1, 2, 3, 4, 5, 6].map((i) => field(o, i)).join(', ')
  const [o1, o2, o3, o4, o5, o6] = [1, 2, 3, 4, 5, 6].map((i) => field(o, i))
  // The short form's test; then the common full case, all finite, tested at once: a sum of
  // finite numbers times 0 is 0 unless it overflows (then each is tested), of an infinity or NaN
  // never.
  const short = `${o1} == 1 and ${o3} == ${burst} and ${o3} > 0 and 1 / ${o2} == HUGE and 1 / ${o6} == HUGE and 1 / ${o4} > 0 and ${o5} - ${o5} == 0`
  return `(${short} and struct.pack('${SHORT_RESULT_FORMAT}', -${o4}, ${o5})) or ((${sum}) * 0 == 0 and struct.pack('${RESULT_FORMAT}', ${plain})) or struct.pack('${RESULT_FORMAT}', ${o1}, ${finite(2)}, ${o3}, ${finite(4)}, ${finite(5)}, ${finite(6)})`
}

/** Lua that packs `out` as one entry's result (see {@link packResult}), its burst `burst`. */
const packOut = packResult('out', 'burst')

/**
 * Lua that answers a one-entry request with `packed` (the Lua of its packed result): the
 * batch's only request returns it as the reply, without R.
 */
const replyOne = (packed: string): string => `local packed_out = ${packed}
    if r == 0 and pos > nblob and reps == 0 then
      ${flushWrites}
      return packed_out
    end
    r = r + 1
    if r == 1 then R = {} end
    R[r] = packed_out`

/**
 * The request-level logic, run for each request of the batch in turn: load each entry's
 * state, dry-run every entry, then (only when every non-shadow entry is allowed) commit the
 * non-shadow entries and the shadow entries that allowed on their own, and write the touched
 * states back with a TTL equal to their useful life. A refund request gives units back
 * instead. `ALG` is the script's list of algorithm functions. Only the algorithms' own
 * functions are defined: Lua allocates every closure afresh on each call, and on Redis that
 * cost dominated a small script.
 *
 * ARGV, KEYS and the reply are laid out as `wire-format.ts` defines them.
 * Requests of one batch are decided one after the other, each all-or-nothing on its own, at
 * one `now`: a later one sees what an earlier one charged, exactly as if each were its own
 * call.
 *
 * State is stored as the algorithm's Float64Array slots packed as little-endian doubles
 * (struct.pack '<d'), so values survive the round trip bit for bit: Lua's tostring keeps
 * only 14 significant digits, which would make Redis drift from core's arithmetic.
 *
 * With `fast` (a script of one algorithm that runs inline, see {@link inlineConsume}), a
 * request that consumes one entry runs the algorithm in place, its state and answer in locals:
 * the table path's steps and Lua, at about a seventh fewer Redis instructions per decision.
 * With `runs` (a script whose algorithms all run inline, by index), a consume of several
 * entries on distinct keys runs each entry's algorithm in place too (see {@link severalInline}),
 * and `algs` (the Lua table of the algorithms' functions) and the table path's tables are made
 * only when a request goes to the table path: closures and tables cost every call that makes
 * them.
 */
const mainOf = (algs: string, fast?: InlineConsume, runs?: readonly InlineConsume[]): string => `
${clock}
-- The batch's answers, made only when there are several: a lone request returns its own.
local R
local r = 0
local k = 0
local blob = ARGV[${ARGV.batch}]
local pos = 1
local nblob = #blob
-- The algorithms' functions by index; \`out\`, reused by every one-entry request (the algorithm
-- fills it, the reply takes a copy); the state tables of requests whose state is packed before
-- the next is read (see loadState).${
  runs
    ? ' Made by the first request the inline paths leave to the tables:\nlocal ALG, out, S2, S3'
    : `\nlocal ALG, out, S2, S3 = ${algs}, ${TABLE_PATH_TABLES}`
}
-- Every key's value, read at once: one MGET costs about what one GET does, whatever the keys
-- (one Cluster slot: a call's keys share a hash tag). A key at slot f (its first place in KEYS)
-- holds got[f]; PX[f] is the write the call owes it (a TTL string: SET, false: DEL, nil: none).
local nk = #KEYS
local got
if nk == 0 then
  got = {}
elseif nk <= ${MGET_KEYS} then
  got = redis.call('MGET', unpack(KEYS))
else
  -- unpack and the Lua stack stop at a few thousand values
  got = {}
  for a = 1, nk, ${MGET_KEYS} do
    local part = redis.call('MGET', unpack(KEYS, a, min(a + ${MGET_KEYS - 1}, nk)))
    for j = 1, #part do got[a + j - 1] = part[j] end
  end
end
local PX = {}
-- Each key's first place in KEYS, made by the first request unless Node said the keys all
-- differ (see keySlotOf).
local first${
  runs
    ? `
-- The writes a request of several entries made, to be undone if it is refused, and the last
-- TTL of entries after a request's first (see severalInline).
local U, next_px, next_pxs`
    : ''
}
-- How many requests still repeat the last one unpacked, where that one's entries start, where
-- its first one ends, and its numbers (see the loop).
local reps = 0
local p_body, p_pos, ${savedLocals}

while pos <= nblob or reps > 0 do
  local body
  local ${requestLocals}
  if reps > 0 then
    -- A request that repeats the one unpacked last (one rule's requests in a batch: the same
    -- entries but for the keys, which KEYS holds) is not packed: it takes that one's numbers,
    -- and the paths that read entries one by one read that one's again. They end where it
    -- ends, which is where the next packed request starts.
    reps = reps - 1
    ${requestLocals} = ${savedLocals}
    body, pos = p_body, p_pos
  else
    body = pos + ${REQUEST_HEADER_BYTES}
    -- The header and the request's first entry in one unpack (every request RedisStore sends
    -- has an entry); the paths that read their entries one by one start again after the header.
    if body + ${ENTRY_BYTES - 1} <= nblob then
      ${requestLocals}, pos = struct.unpack('${LONE_FORMAT}', blob, pos)
    else
      n, m, pos = struct.unpack('${REQUEST_HEADER_FORMAT}', blob, pos)
    end
    if n < 0 then
      -- Negated on the first request: the call's keys all differ (see keySlotOf).
      n = -n
    elseif k == 0 then
      first = {}
    end
    if m >= ${REPEAT_STEP} then
      -- The mode byte also counts the requests after this one that repeat it.
      reps = floor(m / ${REPEAT_STEP})
      m = m - reps * ${REPEAT_STEP}
      p_body, p_pos = body, pos
      ${savedLocals} = ${requestLocals}
    end
  end
  local mode = 'c'
  if m == 1 then mode = 'r' end

  ${
    fast
      ? `if m == ${WIRE_MODES.indexOf('c')} and n == 1 and ai == 1 and size == ${fast.size} then
    -- The common case of a one-algorithm script, one rule consumed, with the algorithm inline
    -- (see inlineConsume): what the n == 1 path below does, without its tables.
    ${keySlot}
    ${queueFullFlag}
    ${cachedRaw}
    ${inlineConsume(fast, batchWrites('f'), TTL_CACHE)}
    ${replyOne(packResult({ locals: 'o' }, 'burst'))}
  else`
      : ''
  }${
    runs
      ? `${severalInline(runs)}
  if not (done or ALG) then ALG, out, S2, S3 = ${algs}, ${TABLE_PATH_TABLES} end
  if done then
  elseif`
      : 'if'
  } m >= 2 then
    pos = body
    -- Peek (2), reset (3) or penalize (4): each entry on its own, nothing all-or-nothing.
    for i = 1, n do
      ${readEntry('_')}
      out[1], out[2], out[3], out[4], out[5], out[6] = 0, 0, 0, 0, 0, 0
      if m == 3 then
        ${batchWrites('f').del}
      else
        ${loadState(cachedRaw, 'size', true)}
        if m == 4 then
          alg('f', s, limit, window_ms, burst, cost, now, 0, true, out)
          ${storeState('alg', 'limit, window_ms, burst', 'out', batchWrites('f'))}
        else
          alg('c', s, limit, window_ms, burst, cost, now, 0, false, out)
        end
      end
      r = r + 1
      if r == 1 then R = {} end
      R[r] = ${packOut}
    end
  elseif n == 1 then
    -- The common case, one rule, without the bookkeeping of several: the algorithm's own
    -- commit is all-or-nothing (a refusal writes nothing), shadow or not. Its entry is
    -- unpacked already.
    ${takeEntry}
    out[1], out[2], out[3], out[4], out[5], out[6] = 0, 0, 0, 0, 0, 0
    ${loadState(cachedRaw, 'size', true)}
    if mode == 'c' then
      ${consumeOne('alg', batchWrites('f'))}
    elseif raw then
      -- Like MemoryStore: a key with no state (fresh or expired) has nothing to give back.
      alg('r', s, limit, window_ms, burst, cost, now, 0, true, out, lease)
      ${storeState('alg', 'limit, window_ms, burst', 'out', batchWrites('f'))}
    end
    ${replyOne(packOut)}
  else
    pos = body
    -- One table per entry (its params double as the algorithm's p), one per distinct key's state.
    local E = {}
    local first_of = {}
    for i = 1, n do
      ${readEntry('shadow', true)}
      local e = {
        alg = alg, limit = limit, window_ms = window_ms, burst = burst, cost = cost,
        max_wait = max_wait, shadow = shadow == 1, key = key, f = f, out = { 0, 0, 0, 0, 0, 0 },
        lease = lease, full = full,
      }
      local owner = first_of[key]
      if owner then
        e.s = owner.s
      else
        ${loadState(cachedRaw, 'size')}
        if raw then e.exists = true end
        e.s = s
        first_of[key] = e
      end
      E[i] = e
    end

    if mode == 'c' then
      local ok = true
      for i = 1, n do
        local e = E[i]
        e.alg('c', e.s, e.limit, e.window_ms, e.burst, e.cost, now, e.max_wait, false, e.out)
        if e.full then ${refuseReservation('e.out')} end
        if not e.shadow and e.out[1] == 0 then ok = false end
      end
      if ok then
        for i = 1, n do
          local e = E[i]
          if not e.shadow or e.out[1] == 1 then
            e.alg('c', e.s, e.limit, e.window_ms, e.burst, e.cost, now, e.max_wait, true, e.out, e.lease)
            first_of[e.key].dirty = true
          end
        end
      end
    else
      for i = 1, n do
        local e = E[i]
        local owner = first_of[e.key]
        -- Like MemoryStore: a key with no state (fresh or expired) has nothing to give back.
        if owner.exists then
          e.alg('r', e.s, e.limit, e.window_ms, e.burst, e.cost, now, 0, true, e.out, e.lease)
          owner.dirty = true
        end
      end
    end

    for i = 1, n do
      local e = E[i]
      if e.dirty then
        local s = e.s
        ${storeState('e.alg', 'e.limit, e.window_ms, e.burst', 'e.out', batchWrites('e.f'))}
      end
      local o = e.out
      r = r + 1
      if r == 1 then R = {} end
      R[r] = ${packResult('o', 'e.burst')}
    end
  end${fast ? '\n  end' : ''}
end
${flushWrites}
return table.concat(R)
`

/**
 * The script that decides a batch of requests: the Lua of each algorithm the requests use,
 * then a per-entry dispatch on the algorithm's index in `algorithms` sorted, so a request
 * whose rules use different algorithms is still one EVALSHA, one round trip and one atomic
 * step. Only the algorithms named are included (each costs a closure per call that uses the
 * table path); with none named, all of them. A script of one algorithm whose state is a few
 * doubles consumes a one-rule request with the algorithm inline, as the lone script does, and
 * a script whose algorithms all have such states a request of several rules too (see
 * {@link mainOf}).
 *
 * @param algorithms - The algorithms the script must handle.
 * @returns The Lua source.
 */
export function decideScript(algorithms: readonly AlgorithmName[] = SCRIPT_ALGORITHMS): string {
  const names = scriptAlgorithms(algorithms)
  // The algorithms' functions by index (a closure each, made when the table is).
  const algs = `{\n${names.map((a) => `-- ${a}\n${ALGORITHM_LUA[a].trim()}`).join(',\n')}\n}`
  const lease = names.includes('concurrency') ? [concurrencyPrelude] : []
  const size = names.length === 1 ? INLINE_STATE_SIZE[names[0]!] : undefined
  const fast = size === undefined ? undefined : inlineRun(names[0]!, size)
  const sizes = names.map((a) => INLINE_STATE_SIZE[a])
  const runs = sizes.every((n) => n !== undefined)
    ? names.map((a, i) => inlineRun(a, sizes[i]!))
    : undefined
  return [prelude, ...lease, mainOf(algs, fast, runs)].join('\n')
}

/**
 * The lone request's part of {@link loneScript}: the same ARGV and packed request as the
 * decide script's, unpacked at once, and the decide script's own fragments for the clock, the
 * state and the consume, without its batch loop, its dispatch and its table of answers.
 */
const lone = `
${clock}
local n, m, ${entryLocals('_')} = struct.unpack('${LONE_FORMAT}', ARGV[${ARGV.batch}])
if n ~= 1 or m ~= ${WIRE_MODES.indexOf('c')} then
  return redis.error_reply('floodgate: the lone script takes one consume of one entry')
end
local key = KEYS[1]
${queueFullFlag}
local out = { 0, 0, 0, 0, 0, 0 }
${loadState(getRaw('key'), 'size')}
${consumeOne('alg', directWrites('key'))}
return ${packOut}
`

/** The state's size in doubles of the algorithms whose lone script runs their Lua inline. */
const INLINE_STATE_SIZE: Partial<Readonly<Record<AlgorithmName, number>>> = {
  'token-bucket': 2,
  gcra: 2,
  'fixed-window': 2,
  'leaky-bucket': 2,
  'sliding-window-counter': 3,
}

/**
 * An algorithm's function (see {@link ALGORITHM_LUA}) turned into a block of Lua that runs in
 * place, for a script that calls it once or twice: no closure built on every call, no table
 * for its state or its answer. Its parameters become the script's locals (`op`, `commit`, the
 * entry's; the buckets' rate is bound to their own names), `s[i]` and `out[i]` become the
 * locals `s<i>` and `o<i>`, each `return` sets `ret` and leaves the block (`repeat …
 * until true`, which `break` leaves), and each `units_left` call runs in place too (see
 * {@link unitsLeftInline}). The text is the function's own, so the arithmetic is
 * the same to the last bit; an algorithm whose Lua this cannot carry over (a loop, which a
 * `break` would leave instead of the block; a state indexed otherwise) throws.
 */
function inlineAlgorithm(algorithm: AlgorithmName, size: number): string {
  const lua = ALGORITHM_LUA[algorithm].trim()
  const head = /^function\(([^)]*)\)\n/.exec(lua)
  if (!head || !lua.endsWith('\nend')) throw new Error(`${algorithm}: not a function expression`)
  const params = head[1]!.split(',').map((p) => p.trim())
  const expected = ['op', 's', '*', '*', 'burst', 'cost', 'now', 'max_wait', 'commit', 'out']
  if (params.length !== expected.length || expected.some((p, i) => p !== '*' && p !== params[i])) {
    throw new Error(`${algorithm}: unexpected parameters ${params.join(', ')}`)
  }
  // Comments go: their words are not code, and the script is generated.
  let body = lua.slice(head[0].length, -'\nend'.length).replace(/--[^\n]*/g, '')
  if (/\b(for|while|repeat|function)\b/.test(body)) {
    throw new Error(`${algorithm}: a loop or a function in its Lua cannot be inlined`)
  }
  body = body
    .replace(/\bout\[(\d)\]/g, (_, i: string) => `o${i}`)
    .replace(/\bs\[(\d)\]/g, (_, i: string) => {
      if (Number(i) > size) throw new Error(`${algorithm}: s[${i}] past its state's ${size}`)
      return `s${i}`
    })
    // `return x` (alone on its line, or as `then return x end`): `ret = x`, then leave.
    .replace(/\breturn\b *(.*?)( end)?$/gm, (_, x: string, end = '') =>
      x === '' ? `break${end}` : `ret = ${x} break${end}`,
    )
  if (/\b(out|s)\[/.test(body)) throw new Error(`${algorithm}: state or answer indexed otherwise`)
  // After the returns became breaks: the function's own loops break out of themselves.
  body = inlineUnitsLeft(body)
  if (/\bunits_left\b/.test(body)) throw new Error(`${algorithm}: units_left called otherwise`)
  const [p1, p2] = params.slice(2)
  const rate = p1 === 'limit' && p2 === 'window_ms' ? '' : `local ${p1}, ${p2} = limit, window_ms\n`
  return `${rate}repeat
    ret = nil
${body}
  until true`
}

/** An algorithm's Lua run inline (see {@link inlineAlgorithm}), and its state's size. */
interface InlineConsume {
  readonly run: string
  readonly size: number
}

/** The inline run of `algorithm`, whose state is `size` doubles. */
const inlineRun = (algorithm: AlgorithmName, size: number): InlineConsume => ({
  run: inlineAlgorithm(algorithm, size),
  size,
})

/** How {@link inlineConsume} fits where it runs. */
interface InlineOptions {
  /** The answer's locals `o1`…`o6` are declared, and zeroed, by the Lua around it. */
  readonly answerDeclared?: boolean
  /** Lua that must hold as well for an admission's state to be written. */
  readonly writeIf?: string
}

/**
 * Lua that consumes a one-entry request with the algorithm inline (`fast`): the entry's
 * locals, `full` and `raw` (the key's value) set; the answer is left in the locals `o1`…`o6`
 * and the state written back (`writes`; `cache`: see {@link ttlString}). The same steps as
 * {@link consumeOne} and {@link storeState}, with the state held in locals.
 */
function inlineConsume(
  { run, size }: InlineConsume,
  writes: StateWrites,
  cache: PxCache | false,
  { answerDeclared = false, writeIf }: InlineOptions = {},
): string {
  const vars = (p: string): string =>
    Array.from({ length: size }, (_, i) => `${p}${i + 1}`).join(', ')
  const zeros = Array.from({ length: size }, () => '0').join(', ')
  const sane = saneDoubles(Array.from({ length: size }, (_, i) => `x${i + 1}`))
  return `${answerDeclared ? '' : 'local o1, o2, o3, o4, o5, o6 = 0, 0, 0, 0, 0, 0'}
-- The state, all zero when there is none, one of the wrong size, or one holding a number
-- Floodgate never writes (see loadState).
local ${vars('s')} = ${zeros}
if raw and #raw == ${size * 8} then
  local ${vars('x')} = struct.unpack('<${'d'.repeat(size)}', raw)
  if ${sane} then ${vars('s')} = ${vars('x')} end
end
-- The consume (see consumeOne): once, committing; with the client's queue full, a dry run,
-- then the commit only of an admission that does not wait.
local op, commit, ret, life = 'c', not full, nil, nil
while true do
  ${run}
  life = ret
  if commit then break end
  ${refuseReservation({ locals: 'o' })}
  if o1 ~= 1 then break end
  commit = true
end
if o1 == 1${writeIf === undefined ? '' : ` and ${writeIf}`} then
  -- See storeState: the useful life, from the commit or asked of the algorithm ('i').
  if life == nil then
    op, cost, max_wait, commit = 'i', 0, 0, false
    ${run}
    life = ret
  end
  local ttl = ceil(life)
  if not (ttl > 0) then
    ${writes.del}
  else
    ${ttlString(cache)}
    local packed = struct.pack('<${'d'.repeat(size)}', ${vars('s')})
    ${writes.set}
  end
end`
}

/**
 * Lua that records a write of the state at slot `f` by the `j`th of `n` entries (the slot, its
 * value and its owed write before: the first entry's in the locals `u_f`, `u_got`, `u_px`, the
 * others' in the table `U`, made on first use), then makes it as {@link batchWrites} does. The
 * last entry's write is not recorded: it is made only when no entry refused.
 */
const undoableWrites = (f: string): StateWrites => {
  const log = `if j == 1 then
      u_f, u_got, u_px = ${f}, got[${f}], PX[${f}]
    elseif j < n then
      if not U then U = {} end
      w = w + 3
      U[w - 2], U[w - 1], U[w] = ${f}, got[${f}], PX[${f}]
    end
    `
  const { set, del } = batchWrites(f)
  return { set: log + set, del: log + del }
}

/**
 * Lua (in the general script's request loop, after the request's header and first entry are
 * read) that consumes a request of several entries with each entry's algorithm inline (`runs`,
 * by the algorithm's index), when its keys are distinct, and sets `done`; else it leaves
 * `done` false, and the table path decides the request. Each entry runs once, as the one-rule
 * path runs it (see {@link inlineConsume}), its state and answer in locals: with distinct keys
 * an entry's dry run and its commit answer alike, so one run gives the answer and the state a
 * commit leaves. An admitted entry's state is written as it goes (the request's later entries
 * read other keys) and logged (see {@link undoableWrites}); when a non-shadow entry refused,
 * every write of the request is undone, so that nothing is charged. An entry the runs cannot
 * take (an algorithm index or state size not theirs) undoes what the request did and leaves it
 * to the table path.
 */
function severalInline(runs: readonly InlineConsume[]): string {
  const locals = entryLocals('shadow')
  const branches = runs.map(
    (run, i) => `if ai == ${i + 1} and size == ${run.size} then
        ${inlineConsume(run, undoableWrites('f'), ENTRY_TTL_CACHE, { answerDeclared: true, writeIf: 'ok' })}
      `,
  )
  return `
  local done = false
  if m == ${WIRE_MODES.indexOf('c')} and n >= 2 then
    -- A key named twice in the request: its entries' dry runs and commits differ (the table
    -- path's job).
    local distinct = true
    if first then
      for a = k + 2, k + n do
        local ka = KEYS[a]
        for b = k + 1, a - 1 do
          if KEYS[b] == ka then distinct = false end
        end
      end
    end
    if distinct then
      local k0, r0, w, ok = k, r, 0, true
      local u_f, u_got, u_px
      done = true
      for j = 1, n do
        -- The first entry is unpacked with the header already.
        local ${locals} = ${locals}
        if j > 1 then
          ${locals}, pos = struct.unpack('${ENTRY_FORMAT}', blob, pos)
        end
        ${keySlot}
        ${queueFullFlag}
        ${cachedRaw}
        local o1, o2, o3, o4, o5, o6 = 0, 0, 0, 0, 0, 0
        ${branches.join('else')}else
          done = false
          break
        end
        if o1 == 0 and shadow ~= 1 then ok = false end
        r = r + 1
        if r == 1 then R = {} end
        R[r] = ${packResult({ locals: 'o' }, 'burst')}
      end
      if not (ok and done) then
        for v = w, 3, -3 do
          local f = U[v - 2]
          got[f], PX[f] = U[v - 1], U[v]
        end
        if u_f then got[u_f], PX[u_f] = u_got, u_px end
      end
      if not done then k, r, pos = k0, r0, body end
    end
  end`
}

/**
 * The lone script of an algorithm whose state is a few doubles ({@link INLINE_STATE_SIZE}):
 * the same ARGV, packed request and reply as {@link lone}, and the same steps, with the
 * algorithm run inline (see {@link inlineConsume}) and the state held in locals.
 */
function inlineLone(algorithm: AlgorithmName, size: number): string {
  return `
${clock}
local n, m, ${entryLocals('_')} = struct.unpack('${LONE_FORMAT}', ARGV[${ARGV.batch}])
if n ~= 1 or m ~= ${WIRE_MODES.indexOf('c')} or size ~= ${size} then
  return redis.error_reply('floodgate: the lone script takes one consume of one entry')
end
local key = KEYS[1]
${queueFullFlag}
${getRaw('key')}
${inlineConsume(inlineRun(algorithm, size), directWrites('key'), false)}
return ${packResult({ locals: 'o' }, 'burst')}
`
}

/**
 * The script for the most common call: a batch of one request that consumes one entry (a
 * request with one rule, sent alone when nothing else is in flight). It answers and writes
 * exactly what {@link decideScript} does for that call, from the same Lua, at fewer Redis
 * instructions per call (see docs/benchmarks.md), which a lone request pays in full as
 * latency. An algorithm whose state is a few doubles runs inline, its state and answer in
 * locals (see {@link inlineAlgorithm}); the others (a log, leases) call the algorithm's
 * function as the decide script does.
 *
 * @param algorithm - The entry's algorithm.
 * @returns The Lua source.
 */
export function loneScript(algorithm: AlgorithmName): string {
  const size = INLINE_STATE_SIZE[algorithm]
  if (size !== undefined) return [preludeOf('inline'), inlineLone(algorithm, size)].join('\n')
  const lease = algorithm === 'concurrency' ? [concurrencyPrelude] : []
  return [prelude, ...lease, `local alg = ${ALGORITHM_LUA[algorithm].trim()}`, lone].join('\n')
}

/** The algorithms of a script in the order of their indexes (the packed entries' uint8). */
export function scriptAlgorithms(algorithms: readonly AlgorithmName[]): AlgorithmName[] {
  return [...new Set(algorithms)].sort()
}

/**
 * The Lua expression that packs one entry's result held in the locals `<prefix>1`…`<prefix>6`
 * for an entry of burst `burst` (a Lua expression), as every script packs it: for tests of
 * the reply's format.
 *
 * @param prefix - The answer's locals' prefix.
 * @param burst - The Lua of the entry's packed burst.
 * @returns The Lua expression.
 */
export function packResultLua(prefix: string, burst: string): string {
  return packResult({ locals: prefix }, burst)
}
