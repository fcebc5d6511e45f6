import fc from 'fast-check'
import { afterEach, describe, expect, it, vi } from 'vitest'
import { withRetry } from '@floodgate/client'

// withRetry with its default sleep on fake timers: however the call ends (an answer, the
// attempts or budget running out, an abort before it starts, during an attempt or during a
// wait), it leaves no timer armed and no listener on the caller's signal.

afterEach(() => {
  vi.useRealTimers()
})

/** A signal whose live abort listeners are counted. */
function countedSignal(controller: AbortController): { signal: AbortSignal; live: () => number } {
  const signal = controller.signal
  const live = new Set<unknown>()
  const add = signal.addEventListener.bind(signal)
  const remove = signal.removeEventListener.bind(signal)
  signal.addEventListener = ((type: string, listener: EventListener, options?: unknown) => {
    live.add(listener)
    const once = typeof options === 'object' && options !== null && 'once' in options
    add(
      type,
      once ? (e: Event) => (live.delete(listener), listener(e)) : listener,
      options as AddEventListenerOptions,
    )
  }) as AbortSignal['addEventListener']
  signal.removeEventListener = ((type: string, listener: EventListener) => {
    live.delete(listener)
    remove(type, listener)
  }) as AbortSignal['removeEventListener']
  return { signal, live: () => live.size }
}

describe('withRetry timers and listeners', () => {
  it('leaves no timer and no listener behind, however the call ends (property)', async () => {
    await fc.assert(
      fc.asyncProperty(
        // Retry-After per answer (seconds), or a 200 to end.
        fc.array(fc.option(fc.integer({ min: 0, max: 5 })), { minLength: 1, maxLength: 6 }),
        // When to abort, in fake ms from the call (-1: before it; undefined: never).
        fc.option(fc.integer({ min: -1, max: 40_000 }), { nil: undefined }),
        // How long each attempt takes in fake ms.
        fc.integer({ min: 0, max: 3000 }),
        fc.integer({ min: 1, max: 6 }),
        async (asks, abortAt, latency, maxAttempts) => {
          vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'Date'] })
          const controller = new AbortController()
          const { signal, live } = countedSignal(controller)
          if (abortAt === -1) controller.abort(new Error('stop'))
          let sent = 0
          const fetchImpl = async (): Promise<Response> => {
            const ask = asks[sent++]
            await new Promise((r) => setTimeout(r, latency))
            if (ask === undefined) return new Response('ok')
            const headers = ask === null ? undefined : { 'retry-after': String(ask) }
            return new Response('no', { status: 429, headers })
          }
          const call = withRetry(fetchImpl, { signal, maxAttempts, maxTotalMs: 30_000 })(
            'http://127.0.0.1:1/',
          ).then(
            (r) => r.status,
            (e: Error) => e.message,
          )
          if (abortAt !== undefined && abortAt >= 0) {
            await vi.advanceTimersByTimeAsync(abortAt)
            controller.abort(new Error('stop'))
          }
          await vi.runAllTimersAsync()
          const outcome = await call
          expect([200, 429, 'stop']).toContain(outcome)
          expect(vi.getTimerCount()).toBe(0)
          expect(live()).toBe(0)
          vi.useRealTimers()
        },
      ),
      { numRuns: 200 },
    )
  })
})
