import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest'
import type { AlgorithmResult, ConsumeEntry } from '@floodgate/core/algorithms'
import { testRule } from '@floodgate/core/testing'
import { BATCH_REQUESTS, BatchQueue, type ScriptCall } from '../src/batch-queue.js'
import { RESULT_FIELDS, decodeBatch } from '../src/wire-format.js'

const rule = testRule('token-bucket', 10, 1000)
const entry = (key: string): ConsumeEntry[] => [{ rule, key, cost: 1, maxWaitMs: 0, shadow: false }]

/** A reply for a call: entry i of the batch gets remaining = i. */
const replyFor = (call: ScriptCall): number[] =>
  call.keys.flatMap((_, i) => [1, 0, 10, i, 0, 0].slice(0, RESULT_FIELDS))

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
  const settle: ((reply: number[]) => void)[] = []
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
        return new Promise<number[]>((resolve) => settle.push(resolve))
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

  it('sends the requests of one turn in one call, and gives each its own results', async () => {
    const h = harness()
    const a = h.queue.enqueue('c', '', entry('a'))
    const b = h.queue.enqueue('c', '', entry('b'))
    expect(h.calls).toHaveLength(0)
    vi.advanceTimersToNextTimer() // the end of the turn
    expect(h.calls).toHaveLength(1)
    expect(h.calls[0]!.keys).toHaveLength(2)
    expect(decodeBatch(h.calls[0]!.packed)).toHaveLength(2)
    h.answer(0)
    expect((await a)[0]!.remaining).toBe(0)
    expect((await b)[0]!.remaining).toBe(1)
  })

  it(`sends at most ${BATCH_REQUESTS} requests per call`, () => {
    const h = harness()
    for (let i = 0; i <= BATCH_REQUESTS; i++) void h.queue.enqueue('c', '', entry(`k${i}`))
    // The full batch left at once; the last request waits for the end of the turn.
    expect(h.calls).toHaveLength(1)
    vi.advanceTimersToNextTimer()
    expect(h.calls.map((c) => c.keys.length)).toEqual([BATCH_REQUESTS, 1])
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
    h.answer(1)
    expect(await d).toHaveLength(1)
  })

  it('on a Cluster, sends one call per hash tag; a failed call is reported', async () => {
    const h = harness({ isCluster: true })
    void h.queue.enqueue('c', '', entry('a'))
    void h.queue.enqueue('c', '', entry('b'))
    vi.advanceTimersToNextTimer()
    expect(h.calls).toHaveLength(2)
    const failing = new BatchQueue({
      prefix: 'p',
      timeoutMs: 50,
      maxPending: 10,
      isCluster: true,
      call: () => Promise.reject(new Error('CLUSTERDOWN')),
      onFailure: () => h.failures++,
      onLateAnswer: () => {},
    })
    const c = failing.enqueue('c', '', entry('c'))
    vi.advanceTimersToNextTimer()
    await expect(c).rejects.toThrow('CLUSTERDOWN')
    expect(h.failures).toBe(1)
  })
})
