import fc from 'fast-check'
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest'
import type { AlgorithmResult, ConsumeEntry } from '@floodgate/core/algorithms'
import { testRule } from '@floodgate/core/testing'
import { BATCH_REQUESTS, BatchQueue, type ScriptCall } from '../src/batch-queue.js'
import { decodeBatch, encodeBatch, encodeReply } from '../src/wire-format.js'

const rule = testRule('token-bucket', 10, 1000)
const entry = (key: string): ConsumeEntry[] => [{ rule, key, cost: 1, maxWaitMs: 0, shadow: false }]

/** A reply for a call: entry i of the batch gets remaining = i. */
const replyFor = (call: ScriptCall): Buffer =>
  encodeReply(call.keys.map((_, i) => [1, 0, 10, i, 0, 0]))

interface Harness {
  queue: BatchQueue
  calls: ScriptCall[]
  /** Settles call i with its reply. */
  answer: (i: number) => void
  late: { results: readonly AlgorithmResult[] }[]
  failures: number
}

function harness(options: { maxPending?: number; isCluster?: boolean } = {}): Harness {
  const calls: ScriptCall[] = []
  const settle: ((reply: Buffer) => void)[] = []
  const h: Harness = {
    calls,
    late: [],
    failures: 0,
    answer: (i) => settle[i]!(replyFor(calls[i]!)),
    queue: new BatchQueue({
      prefix: 'p',
      timeoutMs: 50,
      maxPending: options.maxPending ?? 1000,
      isCluster: options.isCluster ?? false,
      call: (call) => {
        calls.push(call)
        return new Promise<Buffer>((resolve) => settle.push(resolve))
      },
      onFailure: () => h.failures++,
      onLateAnswer: (_mode, _entries, results) => h.late.push({ results }),
    }),
  }
  return h
}

describe('BatchQueue', () => {
  beforeEach(() => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'setImmediate', 'performance'] })
  })
  afterEach(() => {
    vi.useRealTimers()
  })

  it('sends a request at once when nothing is in flight or queued', async () => {
    const h = harness()
    const a = h.queue.enqueue('c', '', entry('a'))
    expect(h.calls).toHaveLength(1)
    expect(h.calls[0]!.keys).toHaveLength(1)
    h.answer(0)
    expect((await a)[0]!.remaining).toBe(0)
    // Answered: the queue is idle again, so the next lone request leaves at once too.
    void h.queue.enqueue('c', '', entry('b'))
    expect(h.calls).toHaveLength(2)
  })

  it('while a call is in flight, sends the requests of one turn in one call, and gives each its own results', async () => {
    const h = harness()
    void h.queue.enqueue('c', '', entry('first'))
    const a = h.queue.enqueue('c', '', entry('a'))
    const b = h.queue.enqueue('c', '', entry('b'))
    expect(h.calls).toHaveLength(1)
    vi.advanceTimersToNextTimer() // the end of the turn
    expect(h.calls).toHaveLength(2)
    expect(h.calls[1]!.keys).toHaveLength(2)
    expect(
      decodeBatch(encodeBatch(h.calls[1]!.packed.requests, h.calls[1]!.packed.algorithms)),
    ).toHaveLength(2)
    h.answer(1)
    expect((await a)[0]!.remaining).toBe(0)
    expect((await b)[0]!.remaining).toBe(1)
  })

  it(`sends at most ${BATCH_REQUESTS} requests per call`, () => {
    const h = harness()
    for (let i = 0; i <= BATCH_REQUESTS + 1; i++) void h.queue.enqueue('c', '', entry(`k${i}`))
    // The first left alone; the next full batch left at once; the last request waits for
    // the end of the turn.
    expect(h.calls).toHaveLength(2)
    vi.advanceTimersToNextTimer()
    expect(h.calls.map((c) => c.keys.length)).toEqual([1, BATCH_REQUESTS, 1])
  })

  it('marks a call for the decide script as of keys that all differ exactly when none stands in it twice (property)', () => {
    // Requests of one to three entries on keys from a small pool, all started in one turn (a
    // key repeats within a request, across requests, or not at all).
    const request = fc.array(fc.integer({ min: 0, max: 40 }), { minLength: 1, maxLength: 3 })
    fc.assert(
      fc.property(fc.array(request, { minLength: 1, maxLength: 40, size: 'max' }), (requests) => {
        const h = harness()
        for (const keys of requests) {
          // Never answered: each fails at its deadline, when later tests move the fake clock.
          h.queue
            .enqueue(
              'c',
              '',
              keys.flatMap((k) => entry(`k${k}`)),
            )
            .catch(() => {})
        }
        vi.advanceTimersToNextTimer()
        expect(h.calls.reduce((n, c) => n + c.packed.requests.length, 0)).toBe(requests.length)
        for (const call of h.calls) {
          const repeats = call.keys.some((k, i) => call.keys.indexOf(k) !== i)
          // The lone script takes no mark (its one entry's count must read 1).
          expect(call.packed.keysDiffer).toBe(!call.lone && !repeats)
          const packed = Buffer.alloc(call.packed.bytes)
          call.packed.writeTo(packed, 0)
          const count = packed.readInt16LE(0)
          expect(count < 0).toBe(call.packed.keysDiffer)
          expect(Math.abs(count)).toBe(call.packed.requests[0]!.entries.length)
        }
      }),
    )
  })

  it('fails every request of batches that miss the deadline with one timer, oldest first', async () => {
    const h = harness()
    const a = h.queue.enqueue('c', '', entry('a'))
    vi.advanceTimersByTime(20)
    const b = h.queue.enqueue('c', '', entry('b'))
    vi.advanceTimersToNextTimer() // b's batch leaves at the end of its turn
    const aFailed = expect(a).rejects.toMatchObject({ code: 'FG_ERR_STORE_TIMEOUT' })
    vi.advanceTimersByTime(30)
    await aFailed
    let bSettled = false
    void b.catch(() => (bSettled = true))
    await Promise.resolve()
    expect(bSettled).toBe(false)
    vi.advanceTimersByTime(20)
    await expect(b).rejects.toMatchObject({ code: 'FG_ERR_STORE_TIMEOUT' })
    expect(vi.getTimerCount()).toBe(0)
  })

  it('fails a request whose answer misses the deadline, and hands the late answer over', async () => {
    const h = harness()
    const a = h.queue.enqueue('c', '', entry('a'))
    const failed = expect(a).rejects.toMatchObject({ code: 'FG_ERR_STORE_TIMEOUT' })
    vi.advanceTimersByTime(50)
    await failed
    expect(h.late).toHaveLength(0)
    h.answer(0)
    await Promise.resolve()
    expect(h.late).toHaveLength(1)
  })

  it('refuses at once past maxPending, and counts a settled request as no longer pending', async () => {
    const h = harness({ maxPending: 2 })
    const a = h.queue.enqueue('c', '', entry('a'))
    void h.queue.enqueue('c', '', entry('b'))
    await expect(h.queue.enqueue('c', '', entry('c'))).rejects.toThrow(/maxPending/)
    vi.advanceTimersToNextTimer()
    h.answer(0)
    await a
    const d = h.queue.enqueue('c', '', entry('d'))
    vi.advanceTimersToNextTimer()
    h.answer(2)
    expect(await d).toHaveLength(1)
  })

  it('on a Cluster, sends one call per hash tag; a failed call is reported', async () => {
    const h = harness({ isCluster: true })
    void h.queue.enqueue('c', '', entry('first'))
    void h.queue.enqueue('c', '', entry('a'))
    void h.queue.enqueue('c', '', entry('b'))
    vi.advanceTimersToNextTimer()
    expect(h.calls.map((c) => c.keys.length)).toEqual([1, 1, 1])
    const failing = new BatchQueue({
      prefix: 'p',
      timeoutMs: 50,
      maxPending: 10,
      isCluster: true,
      call: () => Promise.reject(new Error('CLUSTERDOWN')),
      onFailure: () => h.failures++,
      onLateAnswer: () => {},
    })
    // Nothing in flight on this queue: the request leaves at once.
    const c = failing.enqueue('c', '', entry('c'))
    await expect(c).rejects.toThrow('CLUSTERDOWN')
    expect(h.failures).toBe(1)
  })
  it('settles every request once, whatever order calls are answered in: with its results before its deadline, else a timeout at the deadline and its answer handed over as late (property)', async () => {
    const op = fc.oneof(
      fc.record({ kind: fc.constant('enqueue' as const), n: fc.integer({ min: 1, max: 20 }) }),
      fc.record({ kind: fc.constant('advance' as const), ms: fc.integer({ min: 1, max: 40 }) }),
      fc.record({ kind: fc.constant('answer' as const), pick: fc.nat() }),
    )
    await fc.assert(
      fc.asyncProperty(fc.array(op, { minLength: 1, maxLength: 40, size: 'max' }), async (ops) => {
        const h = harness()
        const start = performance.now()
        const now = (): number => performance.now() - start
        interface Req {
          t0: number
          outcome?: { kind: 'results' | 'timeout'; at: number }
        }
        const reqs: Req[] = []
        const answeredAt = new Map<number, number>()
        let seq = 0
        const answer = (i: number): void => {
          answeredAt.set(i, now())
          h.answer(i)
        }
        for (const o of ops) {
          if (o.kind === 'enqueue') {
            for (let j = 0; j < o.n; j++) {
              const r: Req = { t0: now() }
              reqs.push(r)
              h.queue.enqueue('c', '', entry(`k${seq++}`)).then(
                () => {
                  expect(r.outcome).toBeUndefined()
                  r.outcome = { kind: 'results', at: now() }
                },
                (err: { code?: string }) => {
                  expect(r.outcome).toBeUndefined()
                  expect(err.code).toBe('FG_ERR_STORE_TIMEOUT')
                  r.outcome = { kind: 'timeout', at: now() }
                },
              )
            }
            // The end of the turn: open batches leave.
            await vi.advanceTimersByTimeAsync(0)
          } else if (o.kind === 'advance') {
            await vi.advanceTimersByTimeAsync(o.ms)
          } else {
            const open = h.calls.map((_, i) => i).filter((i) => !answeredAt.has(i))
            if (open.length > 0) answer(open[o.pick % open.length]!)
            await vi.advanceTimersByTimeAsync(0)
          }
        }
        // Answer the rest late, then let every deadline pass.
        for (let i = 0; i < h.calls.length; i++) if (!answeredAt.has(i)) answer(i)
        await vi.advanceTimersByTimeAsync(100)

        // Requests went into calls in the order they were queued.
        const callOf: number[] = []
        h.calls.forEach((c, i) => {
          const packed = Buffer.alloc(c.packed.bytes)
          c.packed.writeTo(packed, 0)
          for (let j = 0; j < decodeBatch(packed).length; j++) callOf.push(i)
        })
        expect(callOf).toHaveLength(reqs.length)
        let late = 0
        reqs.forEach((r, i) => {
          const answered = answeredAt.get(callOf[i]!)!
          expect(r.outcome, `request ${i}`).toBeDefined()
          if (answered < r.t0 + 50) expect(r.outcome).toEqual({ kind: 'results', at: answered })
          else {
            expect(r.outcome).toEqual({ kind: 'timeout', at: r.t0 + 50 })
            late++
          }
        })
        expect(h.late).toHaveLength(late)
        expect(vi.getTimerCount()).toBe(0)
      }),
      { numRuns: 150 },
    )
  })
})
