import { Buffer } from 'node:buffer'
import {
  exactRate,
  type AlgorithmResult,
  type ConsumeEntry,
  type RefundEntry,
} from '@floodgate/core/algorithms'

/**
 * The one definition of what RedisStore sends its script and reads back. The encoder below
 * and the Lua decoder (`scripts/decide-script.ts`, generated from these constants) both
 * follow it, so the two cannot drift apart.
 *
 * ARGV of a script call, by 1-based position (Lua's numbering):
 *
 * 1. nowMs, or '' to use Redis `TIME`;
 * 2. TTL slack in ms added to every state's TTL;
 * 3. the concurrency lease in ms;
 * 4. one string packing every request of the batch, in order.
 *
 * A packed request is a little-endian int16 entry count and a uint8 {@link WIRE_MODES} index
 * (consume, refund, peek, reset, penalize) plus {@link REPEAT_STEP} times the number of requests
 * that follow it and repeat it (see {@link WireRequest.repeats}: they take no bytes), then its
 * entries. The first request's entry count is negated when the call's keys all differ (see
 * {@link encodeRequests}): the script then takes each key's place in KEYS as its slot, without
 * a table of each key's first place. (A flag in an ARGV of its own would cost every call about
 * 1.6k Redis instructions, a string more for Redis and Lua to make, the lone script's
 * included.) A packed entry is a uint8 algorithm index (1-based, into the script's sorted
 * algorithm list) then eight little-endian doubles, as {@link ENTRY_FIELDS} lists them. One
 * string instead of several ARGV fields per entry: fewer arguments for ioredis to encode and
 * Redis to turn into Lua strings, one `struct.unpack` per entry, and exact values.
 *
 * KEYS holds every entry's Redis key, in the order of the packed entries. The reply is one
 * string: every entry's result as little-endian doubles, in the same order: its
 * {@link RESULT_FIELDS} numbers ({@link RESULT_FORMAT}), or, for an admission with no wait
 * whose limit is the entry's burst, the short form ({@link SHORT_RESULT_FORMAT}). One string
 * instead of an array of integers: Redis writes one bulk reply instead of six integers per
 * entry, the client parses one, and the values arrive as the script computed them.
 */
export const ARGV = { now: 1, ttlSlack: 2, leaseMs: 3, batch: 4 } as const

/** A field of a packed entry: its Lua local name and `struct` type. */
interface WireField {
  readonly name: string
  readonly type: 'B' | 'd'
}

/** Bytes of each `struct` type used here. */
const TYPE_BYTES = { B: 1, d: 8, h: 2 } as const

/**
 * The fields of a packed entry, in order. `name` is the Lua local the script unpacks each
 * into; `shadow` is 1 or 0; `size` is the state's size in doubles, 0 for a state of variable
 * size (concurrency leases), which tells the script to take what is stored; `lease` names the
 * concurrency slot a consume takes or a refund gives back (0: unnamed). For the buckets
 * (token bucket, GCRA, leaky bucket) `limit` and `window_ms` carry the rate's exact grid
 * (core's `exactRate`: steps drained per millisecond, steps per unit), the numbers they decide
 * on, so that the script does not work out a gcd on every call.
 */
export const ENTRY_FIELDS = [
  { name: 'ai', type: 'B' },
  { name: 'limit', type: 'd' },
  { name: 'window_ms', type: 'd' },
  { name: 'burst', type: 'd' },
  { name: 'cost', type: 'd' },
  { name: 'max_wait', type: 'd' },
  { name: 'shadow', type: 'd' },
  { name: 'size', type: 'd' },
  { name: 'lease', type: 'd' },
] as const
const entryFieldsAreWireFields: readonly WireField[] = ENTRY_FIELDS
void entryFieldsAreWireFields

type FieldName = (typeof ENTRY_FIELDS)[number]['name']

/** Byte offset of each entry field from the start of its entry. */
export const ENTRY_OFFSET: Readonly<Record<FieldName, number>> = (() => {
  const out: Partial<Record<FieldName, number>> = {}
  let o = 0
  for (const f of ENTRY_FIELDS) {
    out[f.name] = o
    o += TYPE_BYTES[f.type]
  }
  return out as Record<FieldName, number>
})()

/** Bytes of an entry in the packed batch. */
export const ENTRY_BYTES: number = ENTRY_FIELDS.reduce((n, f) => n + TYPE_BYTES[f.type], 0)

/**
 * What a request asks, by its index on the wire: `c` consume (all-or-nothing), `r` refund,
 * `p` peek (a dry run at the entry's cost, nothing written), `x` reset (the state deleted),
 * `f` penalize (the units charged unconditionally; token bucket and GCRA only).
 */
export const WIRE_MODES = ['c', 'r', 'p', 'x', 'f'] as const

/** What a request asks the script (see {@link WIRE_MODES}). */
export type WireMode = (typeof WIRE_MODES)[number]

/**
 * A request's mode byte is its mode's index plus this times its {@link WireRequest.repeats}:
 * the modes take the low 3 bits.
 */
export const REPEAT_STEP = 8

/** Most requests that one packed request may say repeat it (what the mode byte holds). */
export const MAX_REPEATS = 31

/** `struct` format of the request header (the entry count, the mode byte). */
export const REQUEST_HEADER_FORMAT = '<hB'

/** Bytes of a request's header in the packed batch. */
export const REQUEST_HEADER_BYTES: number = TYPE_BYTES.h + TYPE_BYTES.B

/** `struct` format of one entry, for the script's `struct.unpack`. */
export const ENTRY_FORMAT: string = `<${ENTRY_FIELDS.map((f) => f.type).join('')}`

/** Numbers returned per entry: allowed, waitMs, limit, remaining, resetMs, retryAfterMs. */
export const RESULT_FIELDS = 6

/** `struct` format of one entry's result, for the script's `struct.pack`. */
export const RESULT_FORMAT: string = `<${'d'.repeat(RESULT_FIELDS)}`

/** Bytes of one entry's result in the reply. */
export const RESULT_BYTES: number = RESULT_FIELDS * TYPE_BYTES.d

/**
 * `struct` format of a result in its short form: `-remaining`, then `resetMs`. It stands for
 * allowed 1, waitMs 0, retryAfterMs 0 and a limit equal to the entry's packed burst, and is
 * sent only when those hold bit for bit and remaining is +0 or above and finite, so that its
 * first double has the sign bit set, which a full result's first (allowed: 1 or +0) never has.
 * Packing two doubles instead of six saves the script about 1.4k Redis instructions an answer.
 */
export const SHORT_RESULT_FORMAT = '<dd'

/** Doubles of a result in its short form. */
export const SHORT_RESULT_FIELDS = 2

/** An entry as the wire carries it: a consume entry, or a refund with the same fields. */
export type WireEntry =
  | (ConsumeEntry & { readonly lease?: number | undefined })
  | (RefundEntry & { maxWaitMs: number; shadow: boolean })

/** One request as the wire carries it: what it asks, and its entries. */
export interface WireRequest {
  readonly mode: WireMode
  readonly entries: readonly WireEntry[]
  /**
   * How many of the requests right after this one repeat it (0 when absent, at most
   * {@link MAX_REPEATS}): requests of the same mode whose entries pack to the same bytes as
   * this one's but for the keys (see {@link repeatsRequest}). They are not packed: the script
   * decides each with this request's numbers and the next keys. The requests of one set of
   * rules in a batch mostly are such repeats; the script neither unpacks them nor compares
   * their bytes.
   */
  readonly repeats?: number
}

/**
 * Whether a request may be sent as a repeat of `leader` (see {@link WireRequest.repeats}): the
 * same mode and as many entries, each of the same rule as the leader's at its place, at the
 * same cost, wait, shadow flag, queue state and lease, so that their packed bytes are the
 * same. The numbers are compared with `Object.is` (0 and -0 pack to different bytes).
 *
 * @param leader - The request it would repeat.
 * @param mode - The request's mode.
 * @param entries - The request's entries.
 * @returns Whether its packed bytes would repeat the leader's.
 */
export function repeatsRequest(
  leader: WireRequest,
  mode: WireMode,
  entries: readonly WireEntry[],
): boolean {
  if (mode !== leader.mode || entries.length !== leader.entries.length) return false
  for (let i = 0; i < entries.length; i++) {
    const a = entries[i]!
    const b = leader.entries[i]!
    if (
      a.rule !== b.rule ||
      !Object.is(a.cost, b.cost) ||
      !Object.is(a.maxWaitMs, b.maxWaitMs) ||
      a.shadow !== b.shadow ||
      queueFull(a) !== queueFull(b) ||
      !Object.is(a.lease ?? 0, b.lease ?? 0)
    ) {
      return false
    }
  }
  return true
}

/** Whether an entry says the client's queue is full (packed as a negative wait). */
const queueFull = (e: WireEntry): boolean =>
  e.maxWaitMs > 0 && 'queueFull' in e && e.queueFull === true

/**
 * Bytes a request of `entries` entries takes in the packed batch.
 *
 * @param entries - The request's entry count.
 * @returns Its header and entries' bytes.
 */
export function requestBytes(entries: number): number {
  return REQUEST_HEADER_BYTES + entries * ENTRY_BYTES
}

/**
 * Pack requests one after the other into `target` from `offset`: a store writes a batch
 * straight into the buffer that carries the command to Redis, with no copy of its own.
 *
 * @param target - Where to write; must hold the requests' {@link requestBytes} from `offset`.
 * @param offset - Byte offset of the first request.
 * @param requests - The requests, each of at most 32 767 entries.
 * @param algorithms - The script's algorithms, sorted: an entry's index is its 1-based place here.
 * @param keysDiffer - The call's keys all differ: the first request's entry count is negated
 *   (the decide script's mark; not for the lone script, which takes one entry). False is right
 *   for any keys, true only when no key repeats.
 * @returns The offset just past the last request.
 */
export function encodeRequests(
  target: Buffer,
  offset: number,
  requests: readonly WireRequest[],
  algorithms: readonly string[],
  keysDiffer = false,
): number {
  const view = viewOf(target)
  let o = target.byteOffset + offset
  const single = algorithms.length === 1
  for (let r = 0; r < requests.length; r++) {
    const { mode, entries, repeats = 0 } = requests[r]!
    const n = entries.length
    view.setInt16(o, r === 0 && keysDiffer ? -n : n, true)
    view.setUint8(o + TYPE_BYTES.h, WIRE_MODES.indexOf(mode) + REPEAT_STEP * repeats)
    o += REQUEST_HEADER_BYTES
    // The requests that repeat this one are not packed.
    r += repeats
    for (let i = 0; i < n; i++, o += ENTRY_BYTES) {
      const e = entries[i]!
      const rule = e.rule
      const name = rule.algorithm.name
      view.setUint8(o + ENTRY_OFFSET.ai, single ? 1 : algorithms.indexOf(name) + 1)
      const { limit, windowMs } = rule.params
      if (name === 'token-bucket' || name === 'gcra' || name === 'leaky-bucket') {
        // The buckets decide in whole steps of the rate's exact grid: they get it, not the rate.
        const rate = exactRate(limit, windowMs)
        view.setFloat64(o + ENTRY_OFFSET.limit, rate.perMs, true)
        view.setFloat64(o + ENTRY_OFFSET.window_ms, rate.scale, true)
      } else {
        view.setFloat64(o + ENTRY_OFFSET.limit, limit, true)
        view.setFloat64(o + ENTRY_OFFSET.window_ms, windowMs || 0, true)
      }
      view.setFloat64(o + ENTRY_OFFSET.burst, rule.params.burst, true)
      view.setFloat64(o + ENTRY_OFFSET.cost, e.cost, true)
      // Negative: the client's queue is full (the script refuses a wait instead of reserving).
      view.setFloat64(o + ENTRY_OFFSET.max_wait, queueFull(e) ? -e.maxWaitMs : e.maxWaitMs, true)
      view.setFloat64(o + ENTRY_OFFSET.shadow, e.shadow ? 1 : 0, true)
      view.setFloat64(
        o + ENTRY_OFFSET.size,
        name === 'concurrency' ? 0 : rule.algorithm.stateSize(rule.params),
        true,
      )
      view.setFloat64(o + ENTRY_OFFSET.lease, e.lease ?? 0, true)
    }
  }
  return o - target.byteOffset
}

/**
 * DataView writes compile to plain stores (Buffer's write methods copy byte by byte). Small
 * Buffers are slices of one shared pool, so one view over the pool serves every call until
 * Node starts a new pool.
 */
let pooledView: DataView | undefined
function viewOf(target: Buffer): DataView {
  if (pooledView?.buffer !== target.buffer) pooledView = new DataView(target.buffer)
  return pooledView
}

/**
 * Pack requests into a buffer of their own (tests, debugging; a store packs its batch straight
 * into the command's frame with {@link encodeRequests}).
 *
 * @param requests - The requests, each of at most 32 767 entries.
 * @param algorithms - The script's algorithms, sorted (see {@link encodeRequests}).
 * @param keysDiffer - The call's keys all differ (see {@link encodeRequests}).
 * @returns Every request's header and entries, in order.
 */
export function encodeBatch(
  requests: readonly WireRequest[],
  algorithms: readonly string[],
  keysDiffer = false,
): Buffer {
  let bytes = 0
  for (let r = 0; r < requests.length; r += 1 + (requests[r]!.repeats ?? 0)) {
    bytes += requestBytes(requests[r]!.entries.length)
  }
  const packed = Buffer.allocUnsafe(bytes)
  encodeRequests(packed, 0, requests, algorithms, keysDiffer)
  return packed
}

/** A packed request read back: what the script sees. */
export interface DecodedRequest {
  mode: WireMode
  entries: Record<FieldName, number>[]
}

/**
 * Read a packed batch back, as the script does: the inverse of {@link encodeBatch}, for
 * tests and debugging. A request that others repeat is read back once for each.
 *
 * @param batch - Packed requests, concatenated.
 * @returns The requests, in order.
 * @throws Error when the batch ends inside a request.
 */
export function decodeBatch(batch: Buffer): DecodedRequest[] {
  const out: DecodedRequest[] = []
  let pos = 0
  while (pos < batch.length) {
    // Negated on the first request when the call's keys all differ.
    const n = Math.abs(batch.readInt16LE(pos))
    const byte = batch.readUInt8(pos + TYPE_BYTES.h)
    const mode = WIRE_MODES[byte % REPEAT_STEP]
    const repeats = Math.floor(byte / REPEAT_STEP)
    if (mode === undefined) throw new Error(`packed batch: unknown mode at byte ${pos}`)
    pos += REQUEST_HEADER_BYTES
    if (pos + n * ENTRY_BYTES > batch.length) {
      throw new Error(`packed batch: truncated at byte ${pos} (${n} entries announced)`)
    }
    const entries: Record<FieldName, number>[] = []
    for (let i = 0; i < n; i++, pos += ENTRY_BYTES) {
      const e: Partial<Record<FieldName, number>> = {}
      for (const f of ENTRY_FIELDS) {
        const o = pos + ENTRY_OFFSET[f.name]
        e[f.name] = f.type === 'B' ? batch.readUInt8(o) : batch.readDoubleLE(o)
      }
      entries.push(e as Record<FieldName, number>)
    }
    for (let r = 0; r <= repeats; r++) out.push({ mode, entries })
  }
  return out
}

/** Whether a double has its sign bit set (a negative number, -0, or a NaN so written). */
const signed = (x: number): boolean => x < 0 || (x === 0 && 1 / x < 0)

/**
 * Whether the script packs `fields` (a result) in the short form for an entry of burst
 * `burst`: the test of `packResult` in the decide script, on the same numbers.
 */
export function isShortResult(fields: readonly number[], burst: number): boolean {
  const [allowed, waitMs, limit, remaining, resetMs, retryAfterMs] = fields
  return (
    allowed === 1 &&
    limit === burst &&
    limit > 0 &&
    Object.is(waitMs, 0) &&
    Object.is(retryAfterMs, 0) &&
    remaining !== undefined &&
    remaining >= 0 &&
    !Object.is(remaining, -0) &&
    remaining < Infinity &&
    resetMs !== undefined &&
    Number.isFinite(resetMs)
  )
}

/**
 * A reply as the script writes it (tests, debugging): each result's {@link RESULT_FIELDS}
 * numbers as little-endian doubles; with `bursts` (each result's entry's packed burst), a
 * result the script packs short in the short form.
 *
 * @param results - allowed (1 or 0), waitMs, limit, remaining, resetMs, retryAfterMs per entry.
 * @param bursts - The entries' bursts, in the same order; none: every result in full.
 * @returns The reply's bytes.
 */
export function encodeReply(
  results: readonly (readonly number[])[],
  bursts?: readonly number[],
): Buffer {
  const doubles: number[] = []
  results.forEach((fields, i) => {
    const burst = bursts?.[i]
    if (burst !== undefined && isShortResult(fields, burst)) {
      doubles.push(-fields[3]!, fields[4]!)
    } else for (let f = 0; f < RESULT_FIELDS; f++) doubles.push(fields[f] ?? 0)
  })
  const out = Buffer.alloc(doubles.length * TYPE_BYTES.d)
  doubles.forEach((x, i) => out.writeDoubleLE(x, i * TYPE_BYTES.d))
  return out
}

/** Whether this machine stores doubles little-endian, as the reply carries them. */
const LITTLE_ENDIAN = new Uint8Array(new Float64Array([1]).buffer)[7] === 0x3f

/** Where {@link replyValues} reads a reply's doubles into; grown on demand, reused. */
let scratch = new Float64Array(16 * RESULT_FIELDS)
let scratchBytes = new Uint8Array(scratch.buffer)

/**
 * Whether `values[0 .. count)` holds exactly `total` results, each in full or short.
 */
function holdsResults(values: Float64Array, count: number, total: number): boolean {
  let at = 0
  for (let i = 0; i < total; i++) {
    if (at >= count) return false
    at += signed(values[at]!) ? SHORT_RESULT_FIELDS : RESULT_FIELDS
  }
  return at === count
}

/**
 * A batch's reply as its doubles, read once for all of the batch's requests: one copy into an
 * aligned scratch array, then plain element reads. (Buffer's `readDoubleLE`, six per result,
 * is a call each through a property load optimised code does not inline: about 160
 * instructions a double, callgrind.) The array is shared: valid until the next call.
 *
 * @param reply - The script's reply.
 * @param total - Results the whole batch asked for.
 * @returns The reply's doubles, or undefined when the reply is not a string of `total` results
 *   in full or short (a hostile or broken server).
 */
export function replyValues(reply: unknown, total: number): Float64Array | undefined {
  if (!Buffer.isBuffer(reply) || reply.length % TYPE_BYTES.d !== 0) return undefined
  const count = reply.length / TYPE_BYTES.d
  if (count > total * RESULT_FIELDS) return undefined
  if (scratch.length < count) {
    scratch = new Float64Array(Math.max(count, 2 * scratch.length))
    scratchBytes = new Uint8Array(scratch.buffer)
  }
  if (LITTLE_ENDIAN) scratchBytes.set(reply)
  else for (let i = 0; i < count; i++) scratch[i] = reply.readDoubleLE(8 * i)
  return holdsResults(scratch, count, total) ? scratch : undefined
}

/**
 * Whether a script's reply has the shape the script writes for `total` results: a string of
 * `total` results, each in full or short. Anything else says nothing of what the script did.
 */
export function isWellFormedReply(reply: unknown, total: number): reply is Buffer {
  return replyValues(reply, total) !== undefined
}

/**
 * Reads a batch's results request by request, from the doubles {@link replyValues} gave (or
 * none: a reply of the wrong shape).
 */
export class ReplyReader {
  /** The index of the next result's first double. */
  private at = 0

  /** @param values - The reply's doubles, or undefined for a reply of the wrong shape. */
  constructor(private readonly values: Float64Array | undefined) {}

  /**
   * The next results, one per entry; none when the reply had the wrong shape (the limiter then
   * fails open on an answer that does not match its entries). A short result's limit is its
   * entry's burst, as packed.
   *
   * @param entries - The request's entries, in order.
   * @returns The results, in order.
   */
  next(entries: readonly WireEntry[]): AlgorithmResult[] {
    const values = this.values
    if (values === undefined) return []
    const n = entries.length
    const out: AlgorithmResult[] = new Array<AlgorithmResult>(n)
    let b = this.at
    for (let i = 0; i < n; i++) {
      const first = values[b]!
      if (signed(first)) {
        out[i] = {
          allowed: true,
          waitMs: 0,
          limit: entries[i]!.rule.params.burst,
          remaining: -first,
          resetMs: values[b + 1]!,
          retryAfterMs: 0,
        }
        b += SHORT_RESULT_FIELDS
      } else {
        out[i] = {
          allowed: first === 1,
          waitMs: values[b + 1]!,
          limit: values[b + 2]!,
          remaining: values[b + 3]!,
          resetMs: values[b + 4]!,
          retryAfterMs: values[b + 5]!,
        }
        b += RESULT_FIELDS
      }
    }
    this.at = b
    return out
  }
}
