import type { Buffer } from 'node:buffer'
import { FloodgateError } from '@floodgate/core'
import { type AlgorithmName, type AlgorithmResult } from '@floodgate/core/algorithms'
import { hashTag, redisKey } from './redis-key.js'
import { scriptAlgorithms } from './scripts/decide-script.js'
import type { FrameTail } from './script-frame.js'
import {
  MAX_REPEATS,
  ReplyReader,
  encodeRequests,
  repeatsRequest,
  replyValues,
  requestBytes,
  type WireEntry,
  type WireMode,
} from './wire-format.js'

/**
 * Most requests decided by one script call. A batch is answered only once Redis has run all
 * of it, so one huge batch would make Node and Redis take turns; several medium ones keep
 * both busy. Measured with `bench/redis` (see docs/benchmarks.md).
 */
export const BATCH_REQUESTS = 16

/** One script call as the queue hands it over: everything but the store's fixed ARGV. */
export interface ScriptCall {
  /** The script's algorithm set ('token-bucket', 'fixed-window,token-bucket', …). */
  readonly id: string
  /** The batch is one request that consumes one entry (the store's lone script decides it). */
  readonly lone: boolean
  /** `nowMs` as the script's first ARGV ('' for Redis TIME). */
  readonly now: string
  /** Every entry's Redis key, in the order of the packed entries. */
  readonly keys: readonly string[]
  /** Every request's packed header and entries, concatenated, written where the call says. */
  readonly packed: PackedBatch
}

/** A batch's requests, packed only when the call's frame is built, straight into it. */
export class PackedBatch implements FrameTail {
  /**
   * @param requests - The batch's requests, in order.
   * @param bytes - Their packed size.
   * @param algorithms - The script's algorithms, sorted (the packed entries' indexes).
   * @param keysDiffer - The call's keys all differ, and it goes to the decide script (see
   *   `encodeRequests`).
   */
  constructor(
    readonly requests: readonly { mode: WireMode; entries: readonly WireEntry[] }[],
    readonly bytes: number,
    readonly algorithms: readonly AlgorithmName[],
    readonly keysDiffer = false,
  ) {}

  writeTo(target: Buffer, offset: number): void {
    encodeRequests(target, offset, this.requests, this.algorithms, this.keysDiffer)
  }
}

/** What a {@link BatchQueue} needs from its store. */
export interface BatchQueueOptions {
  /** Key prefix (validated by the store). */
  readonly prefix: string
  /** Deadline of every request, from when its batch opened. */
  readonly timeoutMs: number
  /** Most requests awaiting Redis at once. */
  readonly maxPending: number
  /** On a Cluster one call touches one slot: batches are also split by hash tag. */
  readonly isCluster: boolean
  /** Run one batch's script (its reply as the client parsed it); may throw synchronously. */
  readonly call: (call: ScriptCall) => Promise<unknown>
  /** A call failed (the store may refresh the Cluster topology). */
  readonly onFailure: () => void
  /** A sent call missed its deadline (the store may check whether the link is dead). */
  readonly onDeadline?: () => void
  /** Redis answered a request after its deadline had failed it. */
  readonly onLateAnswer: (
    mode: WireMode,
    entries: readonly WireEntry[],
    results: readonly AlgorithmResult[],
    now: string,
  ) => void
}

/** One request waiting in a batch. */
interface BatchedRequest {
  mode: WireMode
  entries: readonly WireEntry[]
  /** The requests right after this one that repeat it, not packed (see `WireRequest.repeats`). */
  repeats: number
  resolve: (results: AlgorithmResult[]) => void
  reject: (err: Error) => void
}

/** Requests that go to Redis together in one script call. */
interface Batch {
  key: string
  id: string
  now: string
  /** The script's algorithms, in the order of the indexes the packed entries carry. */
  algorithms: readonly AlgorithmName[]
  requests: BatchedRequest[]
  /** The packed request the batch's last requests repeat, or the last one packed. */
  leader: BatchedRequest | undefined
  keys: string[]
  /** The requests' packed size. */
  bytes: number
  sent: boolean
  /** Redis answered or the call failed. */
  settled: boolean
  timedOut: boolean
  /** `performance.now()` past which the batch is not sent, and its requests fail. */
  deadline: number
  /** The next younger batch in the watch queue. */
  nextWatched: Batch | undefined
}

/**
 * Groups the requests started in one turn of the event loop into script calls, and bounds
 * each request by the deadline and the number of requests waiting.
 */
export class BatchQueue {
  private pending = 0
  /** Script calls settled (answered or failed) so far: whether the link still moves. */
  settledCalls = 0
  /** Script calls sent and not answered yet. */
  private inFlight = 0
  /** Batches still taking requests, by script, `now` and (on a Cluster) hash tag. */
  private readonly open = new Map<string, Batch>()
  private flushScheduled = false
  /**
   * Batches not settled yet, oldest first, linked through `nextWatched`: every deadline is its
   * opening time plus the same `timeoutMs`, so this is also deadline order, and one timer at
   * the oldest deadline serves them all (a timer per call cost more than the rest of the
   * queue's work). A linked queue, not an array: emptying an array costs a runtime call.
   */
  private oldest: Batch | undefined
  private youngest: Batch | undefined
  private timer: ReturnType<typeof setTimeout> | undefined
  /** Each script id's algorithms: a `split` per batch cost about 1.1k instructions. */
  private readonly algorithmsById = new Map<string, readonly AlgorithmName[]>()

  constructor(private readonly options: BatchQueueOptions) {}

  /** The algorithms of a script id, in the order of the packed entries' indexes. */
  private algorithmsOf(id: string): readonly AlgorithmName[] {
    let algorithms = this.algorithmsById.get(id)
    if (algorithms === undefined) {
      // The id lists the script's algorithms already sorted (see scriptId).
      algorithms = id.split(',') as AlgorithmName[]
      this.algorithmsById.set(id, algorithms)
    }
    return algorithms
  }

  /**
   * Queue one request's entries for the next script call of their batch. A request that
   * finds nothing in flight and nothing queued leaves at once: there is no call to share, and
   * waiting for the end of the turn would only add latency. Otherwise requests started in the
   * same turn of the event loop (every request read in its poll phase, every caller woken by
   * one batch's reply) share one EVALSHA and one `TIME`, up to {@link BATCH_REQUESTS} per
   * call. The deadline runs from when the batch opened, so no request waits past it.
   *
   * @param mode - What the request asks (see `WIRE_MODES`): consume, refund, peek, reset, penalize.
   * @param now - `nowMs` for the script ('' for Redis TIME).
   * @param entries - The request's entries; on a Cluster, all of one hash tag.
   * @param oneKey - The entries all have one Redis key, and share their call only with
   *   requests of that key (a call of several keys of a slot being migrated is refused).
   * @returns The entries' results; rejects on a missed deadline or a Redis error.
   */
  enqueue(
    mode: WireMode,
    now: string,
    entries: readonly WireEntry[],
    oneKey = false,
  ): Promise<AlgorithmResult[]> {
    if (this.pending >= this.options.maxPending) {
      return Promise.reject(
        new FloodgateError(
          'FG_ERR_STORE_TIMEOUT',
          `redis store: ${this.pending} calls already waiting on Redis (maxPending); not sending more`,
        ),
      )
    }
    const id = scriptId(entries)
    // Idle: this request is alone in its call whatever else the turn brings; send it now.
    const alone = this.inFlight === 0 && this.open.size === 0
    // A script call touches one slot on a Cluster and runs at one `now`: batch accordingly.
    // With Redis as the clock (`now` ''), a single Redis batches by the script id alone, a
    // string that is not built per request (ids hold no '|', so no key of another form equals
    // it): building `${id}|` and hashing it for the lookup cost more than the rest of the
    // request's queueing.
    const batchKey = alone
      ? ''
      : oneKey
        ? `${id}|${now}|${redisKey(this.options.prefix, entries[0]!.key, entries[0]!.rule.stateId)}`
        : this.options.isCluster
          ? `${id}|${now}|${hashTag(entries[0]!.key)}`
          : now === ''
            ? id
            : `${id}|${now}`
    const batch = (alone ? undefined : this.open.get(batchKey)) ?? this.openBatch(batchKey, id, now)
    this.pending++
    for (const e of entries) batch.keys.push(redisKey(this.options.prefix, e.key, e.rule.stateId))
    const result = new Promise<AlgorithmResult[]>((resolve, reject) => {
      batch.requests.push({ mode, entries, repeats: 0, resolve, reject })
    })
    // A request that repeats the last one packed (one rule's requests, but for the key) is
    // sent as a count on that one: the script neither unpacks nor compares it.
    const leader = batch.leader
    if (
      leader !== undefined &&
      leader.repeats < MAX_REPEATS &&
      repeatsRequest(leader, mode, entries)
    ) {
      leader.repeats++
    } else {
      batch.bytes += requestBytes(entries.length)
      batch.leader = batch.requests[batch.requests.length - 1]
    }
    if (alone || batch.requests.length >= BATCH_REQUESTS) this.send(batch)
    return result
  }

  /** A new batch under its deadline; `batchKey` '' is a lone request's, sent by the caller. */
  private openBatch(batchKey: string, id: string, now: string): Batch {
    const batch: Batch = {
      key: batchKey,
      id,
      now,
      algorithms: this.algorithmsOf(id),
      requests: [],
      leader: undefined,
      keys: [],
      bytes: 0,
      sent: false,
      settled: false,
      timedOut: false,
      deadline: performance.now() + this.options.timeoutMs,
      nextWatched: undefined,
    }
    if (this.youngest === undefined) this.oldest = batch
    else this.youngest.nextWatched = batch
    this.youngest = batch
    if (this.timer === undefined) this.arm(batch.deadline)
    if (batchKey === '') return batch
    this.open.set(batchKey, batch)
    if (!this.flushScheduled) {
      this.flushScheduled = true
      setImmediate(this.flush)
    }
    return batch
  }

  private arm(deadline: number): void {
    this.timer = setTimeout(this.expire, Math.max(0, deadline - performance.now()))
    // A call in flight keeps the process alive through its socket; the deadline need not.
    this.timer.unref?.()
  }

  /** The oldest deadline passed: fail what is due, forget what settled, wait for the next. */
  private readonly expire = (): void => {
    this.timer = undefined
    const t = performance.now()
    let b = this.oldest
    while (b !== undefined) {
      if (!b.settled && !b.timedOut) {
        if (b.deadline > t) break
        this.timeOut(b)
      }
      b = b.nextWatched
    }
    this.watchFrom(b)
    if (b !== undefined) this.arm(b.deadline)
  }

  /**
   * Drop the settled batches at the head of the watch queue now, not when the timer next
   * fires: kept until then (up to `timeoutMs`), thousands of answered batches, with their
   * requests and entries, would survive young-generation collections and be copied and
   * promoted instead of dying young. Batches mostly settle in the order they were sent.
   */
  private forgetSettled(): void {
    let b = this.oldest
    while (b !== undefined && (b.settled || b.timedOut)) b = b.nextWatched
    this.watchFrom(b)
  }

  /** The watch queue now starts at `b` (empty when undefined). */
  private watchFrom(b: Batch | undefined): void {
    this.oldest = b
    if (b === undefined) this.youngest = undefined
  }

  /** Send every batch still open: the end of the turn in which their requests started. */
  private readonly flush = (): void => {
    this.flushScheduled = false
    for (const batch of this.open.values()) this.send(batch)
  }

  private send(batch: Batch): void {
    if (batch.key !== '') {
      // A handler that hogged the event loop can make a batch miss its deadline before it
      // leaves (a lone request's batch leaves as it opens).
      if (performance.now() >= batch.deadline) {
        this.timeOut(batch)
        return
      }
      this.open.delete(batch.key)
    }
    batch.sent = true
    this.inFlight++
    const keys = batch.keys
    const lone = keys.length === 1 && batch.requests[0]!.mode === 'c'
    // The decide script keeps a table of each key's first place only when a key may repeat.
    const keysDiffer = !lone && (keys.length < 2 || new Set(keys).size === keys.length)
    const packed = new PackedBatch(batch.requests, batch.bytes, batch.algorithms, keysDiffer)
    let call: Promise<unknown>
    try {
      call = this.options.call({ id: batch.id, lone, now: batch.now, keys, packed })
    } catch (err) {
      // Sent from a setImmediate, a synchronous throw would be uncaught: fail the batch instead.
      call = Promise.reject(err instanceof Error ? err : new Error(String(err)))
    }
    call.then(
      (reply) => {
        batch.settled = true
        this.inFlight--
        this.settledCalls++
        this.forgetSettled()
        // One key per entry: the batch asked for as many results as it sent keys.
        const reader = new ReplyReader(replyValues(reply, batch.keys.length))
        for (const req of batch.requests) {
          this.pending--
          const results = reader.next(req.entries)
          if (batch.timedOut) this.options.onLateAnswer(req.mode, req.entries, results, batch.now)
          else req.resolve(results)
        }
      },
      (err: unknown) => {
        batch.settled = true
        this.inFlight--
        this.settledCalls++
        this.forgetSettled()
        this.pending -= batch.requests.length
        this.options.onFailure()
        if (batch.timedOut) return
        // A user-supplied client's own commandTimeout may fire first: it is a missed deadline too.
        if (err instanceof Error && err.message === 'Command timed out') this.timeOut(batch)
        else {
          const error = err instanceof Error ? err : new Error(String(err))
          for (const req of batch.requests) req.reject(error)
        }
      },
    )
  }

  /**
   * The batch missed its deadline: its requests fail now (the limiter fails open). A batch
   * that had not left yet is dropped unsent, so it is never counted.
   */
  private timeOut(batch: Batch): void {
    if (batch.timedOut) return
    batch.timedOut = true
    if (!batch.sent) {
      if (batch.key !== '') this.open.delete(batch.key)
      this.pending -= batch.requests.length
    } else this.options.onDeadline?.()
    const error = new FloodgateError(
      'FG_ERR_STORE_TIMEOUT',
      `redis store: no answer within ${this.options.timeoutMs} ms`,
    )
    for (const req of batch.requests) req.reject(error)
  }
}

/**
 * The script id for the algorithms of these entries ('token-bucket',
 * 'fixed-window,token-bucket', …). One script per algorithm set keeps each call cheap (Lua
 * allocates every function a script defines on every call) while a request whose rules mix
 * algorithms still takes one round trip.
 */
function scriptId(entries: readonly { rule: { algorithm: { name: AlgorithmName } } }[]): string {
  if (entries.length === 1) return entries[0]!.rule.algorithm.name
  return scriptAlgorithms(entries.map((e) => e.rule.algorithm.name)).join(',')
}
