import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { backoffDelayMs, withRetry, type FetchInput } from '@floodgate/client'

// withRetry against a model of its contract, over whole sequences of answers: which attempts
// are sent, how long each wait is, and when it stops. The model is written from the documented
// rules, not from the code:
// - idempotent methods (GET, HEAD, OPTIONS, TRACE, PUT, DELETE) are retried; others only with
//   retryNonIdempotent; a streaming body never (it cannot be sent twice);
// - a refusal (429, 503) is retried while attempts and budget are left; any other status ends;
// - the wait is max(server ask, min(backoff, budget left)); a server ask past the budget left,
//   or one no clock can reach (a delay past what a double holds), ends the retries at once,
//   with the refusal, even with no budget bound (maxTotalMs Infinity);
// - an abort during a wait rejects with its reason, and nothing more is sent;
// - so does an abort while an attempt is in flight, whatever the fetch does then (answers as if
//   it had not heard, fails as a network error, rejects with an abort error of its own), and
//   onRetry is not called for a call already aborted.

const METHODS = ['GET', 'HEAD', 'PUT', 'DELETE', 'OPTIONS', 'POST', 'PATCH'] as const
const IDEMPOTENT = new Set(['GET', 'HEAD', 'PUT', 'DELETE', 'OPTIONS'])
type BodyKind = 'none' | 'text' | 'stream'

interface Answer {
  readonly status: 200 | 404 | 429 | 500 | 503
  /** Retry-After in seconds, when sent; 'huge' is 400 nines, past what a double holds. */
  readonly retryAfter: number | 'huge' | undefined
}

interface Case {
  readonly method: (typeof METHODS)[number]
  readonly body: BodyKind
  readonly retryNonIdempotent: boolean
  readonly maxAttempts: number
  readonly baseMs: number
  readonly capMs: number
  readonly maxTotalMs: number
  readonly draw: number
  readonly answers: readonly Answer[]
  /** Abort during this wait (1 for the first), if any. */
  readonly abortAtWait: number | undefined
  /** Abort while this attempt (1 for the first) is in flight, if any. */
  readonly abortAtAttempt: number | undefined
  /** What the fetch does with an attempt aborted in flight. */
  readonly abortedFetch: 'answers' | 'network-error' | 'own-abort-error'
}

interface Outcome {
  readonly sent: number
  readonly waits: readonly number[]
  readonly result: { status: number } | { aborted: true }
}

function model(c: Case): Outcome {
  const retryable =
    (IDEMPOTENT.has(c.method) || c.retryNonIdempotent) && c.body !== 'stream' && c.maxAttempts > 1
  const waits: number[] = []
  let waited = 0
  for (let attempt = 1; ; attempt++) {
    if (c.abortAtAttempt === attempt) return { sent: attempt, waits, result: { aborted: true } }
    const answer = c.answers[attempt - 1] ?? { status: 200, retryAfter: undefined }
    const refused = answer.status === 429 || answer.status === 503
    if (!refused || !retryable || attempt >= c.maxAttempts) {
      return { sent: attempt, waits, result: { status: answer.status } }
    }
    const left = c.maxTotalMs - waited
    const asked = askedMs(answer)
    if (left <= 0 || (asked !== undefined && (asked > left || asked === Infinity))) {
      return { sent: attempt, waits, result: { status: answer.status } }
    }
    const backoff = backoffDelayMs(attempt - 1, {
      baseMs: c.baseMs,
      capMs: c.capMs,
      random: () => c.draw,
    })
    const wait = Math.max(asked ?? 0, Math.min(backoff, left))
    waits.push(wait)
    waited += wait
    if (c.abortAtWait === waits.length) return { sent: attempt, waits, result: { aborted: true } }
  }
}

function askedMs(a: Answer): number | undefined {
  if (a.retryAfter === 'huge') return Infinity
  return a.retryAfter === undefined ? undefined : a.retryAfter * 1000
}

const answer = fc.record({
  status: fc.constantFrom<Answer['status']>(200, 404, 429, 500, 503, 429, 503),
  retryAfter: fc.option(fc.oneof(fc.integer({ min: 0, max: 120 }), fc.constant('huge' as const)), {
    nil: undefined,
  }),
})

const testCase: fc.Arbitrary<Case> = fc.record({
  method: fc.constantFrom(...METHODS),
  body: fc.constantFrom<BodyKind>('none', 'text', 'stream'),
  retryNonIdempotent: fc.boolean(),
  maxAttempts: fc.integer({ min: 1, max: 7 }),
  baseMs: fc.integer({ min: 0, max: 5000 }),
  capMs: fc.integer({ min: 0, max: 60_000 }),
  maxTotalMs: fc.oneof(fc.integer({ min: 0, max: 300_000 }), fc.constant(Infinity)),
  draw: fc.double({ min: 0, max: 1, maxExcluded: true, noNaN: true }),
  answers: fc.array(answer, { minLength: 1, maxLength: 8 }),
  abortAtWait: fc.option(fc.integer({ min: 1, max: 6 }), { nil: undefined }),
  abortAtAttempt: fc.option(fc.integer({ min: 1, max: 7 }), { nil: undefined }),
  abortedFetch: fc.constantFrom<Case['abortedFetch']>(
    'answers',
    'network-error',
    'own-abort-error',
  ),
})

function bodyOf(kind: BodyKind): BodyInit | undefined {
  if (kind === 'none') return undefined
  if (kind === 'text') return 'payload'
  return new ReadableStream({
    start(controller) {
      controller.enqueue(new TextEncoder().encode('payload'))
      controller.close()
    },
  })
}

describe('withRetry against its model (property)', () => {
  it('sends, waits and stops as the model says; every wait within the cap or the server ask, all within the budget; an abort sends nothing more', async () => {
    await fc.assert(
      fc.asyncProperty(testCase, async (c) => {
        const controller = new AbortController()
        const reason = new Error('caller gave up')
        let now = Date.UTC(2026, 10, 28)
        const bodies: unknown[] = []
        const waits: number[] = []
        const fetchImpl = (_input: FetchInput, init?: RequestInit): Promise<Response> => {
          bodies.push(init?.body)
          const a = c.answers[bodies.length - 1] ?? { status: 200, retryAfter: undefined }
          const headers: Record<string, string> =
            a.retryAfter === undefined
              ? {}
              : { 'retry-after': a.retryAfter === 'huge' ? '9'.repeat(400) : String(a.retryAfter) }
          if (c.abortAtAttempt === bodies.length) {
            // The caller gives up while this attempt is in flight; this fetch does not listen.
            controller.abort(reason)
            if (c.abortedFetch === 'network-error') {
              return Promise.reject(
                new TypeError('fetch failed', { cause: { code: 'ECONNRESET' } }),
              )
            }
            if (c.abortedFetch === 'own-abort-error') {
              return Promise.reject(new DOMException('This operation was aborted', 'AbortError'))
            }
          }
          return Promise.resolve(new Response(null, { status: a.status, headers }))
        }
        let hooksAfterAbort = 0
        const call = withRetry(fetchImpl, {
          maxAttempts: c.maxAttempts,
          baseMs: c.baseMs,
          capMs: c.capMs,
          maxTotalMs: c.maxTotalMs,
          retryNonIdempotent: c.retryNonIdempotent,
          random: () => c.draw,
          clock: () => now,
          signal: controller.signal,
          onRetry: () => {
            if (controller.signal.aborted) hooksAfterAbort++
          },
          sleep: (ms, signal) => {
            waits.push(ms)
            now += ms
            if (c.abortAtWait === waits.length) controller.abort(reason)
            return signal?.aborted ? Promise.reject(signal.reason as Error) : Promise.resolve()
          },
        })
        const body = bodyOf(c.body)
        const init: RequestInit =
          body === undefined
            ? { method: c.method }
            : { method: c.method, body, ...(c.body === 'stream' && { duplex: 'half' }) }
        const expected = model(c)
        let result: Outcome['result']
        try {
          result = { status: (await call('http://127.0.0.1:1/x', init)).status }
        } catch (e) {
          expect(e).toBe(reason)
          result = { aborted: true }
        }
        expect({ sent: bodies.length, waits, result }).toEqual(expected)
        expect(hooksAfterAbort).toBe(0)
        // Bounds that hold whatever the model: each wait is within the backoff cap or what the
        // server asked, the waits in all within the budget.
        for (const [i, w] of waits.entries()) {
          const a = c.answers[i]
          expect(Number.isFinite(w)).toBe(true)
          expect(w).toBeLessThanOrEqual(Math.max(c.capMs, (a && askedMs(a)) ?? 0))
        }
        expect(waits.reduce((a, b) => a + b, 0)).toBeLessThanOrEqual(c.maxTotalMs)
        // A stream is handed to fetch once; a replayable body is the same one each attempt.
        if (c.body === 'stream') expect(bodies.length).toBe(1)
        for (const b of bodies) expect(b).toBe(body)
      }),
      { numRuns: 300 },
    )
  })
})
