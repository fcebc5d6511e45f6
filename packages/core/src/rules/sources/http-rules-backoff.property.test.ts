import fc from 'fast-check'
import { afterEach, describe, expect, it, vi } from 'vitest'
import { backoffDelay, httpRules } from './http-rules.js'

// A rules service that fails keeps being polled: without backoff a fleet of hosts hammers it at
// the normal interval for as long as it is down. These tests drive the poller with a fake clock
// and a `fetch` that answers from a script, so every gap between two polls is exact.

const RULES = JSON.stringify({ rules: [{ id: 'api', limit: 5, window: '1s' }] })
const INTERVAL = 10
const MAX_BACKOFF = 160

type Outcome = 'ok' | 'http-500' | 'reset' | 'garbage'

function answer(outcome: Outcome, n: number): Promise<Response> {
  switch (outcome) {
    case 'ok':
      // A new ETag each time, so every good poll delivers (and none is a 304 from nothing).
      return Promise.resolve(new Response(RULES, { headers: { etag: `"v${n}"` } }))
    case 'http-500':
      return Promise.resolve(new Response('{"status":500}', { status: 500 }))
    case 'reset':
      return Promise.reject(new TypeError('fetch failed', { cause: { code: 'ECONNRESET' } }))
    case 'garbage':
      return Promise.resolve(new Response('{"rules": [', { headers: { etag: `"g${n}"` } }))
  }
}

/** The gap the model expects after a poll that leaves `failures` failures in a row. */
function expectedGap(failures: number): number {
  return failures === 0 ? INTERVAL : Math.min(MAX_BACKOFF, INTERVAL * 2 ** (failures - 1))
}

afterEach(() => {
  vi.useRealTimers()
})

describe('httpRules backoff', () => {
  it('waits longer after each failure in a row, up to maxBackoffMs, and polls at the interval again after a success', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'Date'] })
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.constantFrom<Outcome>('ok', 'http-500', 'reset', 'garbage'), {
          minLength: 1,
          maxLength: 14,
        }),
        async (outcomes) => {
          const calls: number[] = []
          const source = httpRules('http://rules.test/v1/services/api/ruleset', {
            intervalMs: INTERVAL,
            maxBackoffMs: MAX_BACKOFF,
            jitter: 0,
            timeoutMs: 100_000,
            fetch: () => {
              const n = calls.length
              calls.push(Date.now())
              return answer(outcomes[n] ?? 'ok', n)
            },
          })
          try {
            await source.start(
              () => {},
              () => {},
            )
            // Step the clock 1 ms at a time, letting each poll settle, until every scripted
            // answer has been given and the next poll after it has started.
            for (let step = 0; calls.length <= outcomes.length && step < 5000; step++) {
              await vi.advanceTimersByTimeAsync(1)
              await new Promise((resolve) => setImmediate(resolve))
            }
          } finally {
            source.stop()
          }
          expect(calls.length).toBeGreaterThan(outcomes.length)
          let failures = 0
          for (let i = 0; i < outcomes.length; i++) {
            failures = outcomes[i] === 'ok' ? 0 : failures + 1
            expect(calls[i + 1]! - calls[i]!, `gap after poll ${i} (${outcomes[i]})`).toBe(
              expectedGap(failures),
            )
          }
        },
      ),
      { numRuns: 40 },
    )
  })

  it('refuses a maxBackoffMs that is not a whole number of ms', () => {
    expect(() => httpRules('http://x/', { maxBackoffMs: 0 })).toThrow(/maxBackoffMs/)
    expect(() => httpRules('http://x/', { maxBackoffMs: 1.5 })).toThrow(/maxBackoffMs/)
    expect(() => httpRules('http://x/', { maxBackoffMs: 2 ** 31 })).toThrow(/maxBackoffMs/)
  })
})

describe('backoffDelay', () => {
  it('grows with the failures in a row, stays within the jittered cap and what setTimeout honours', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 2 ** 31 - 1 }),
        fc.integer({ min: 1, max: 2 ** 31 - 1 }),
        fc.nat({ max: 10_000 }),
        fc.double({ min: 0, max: 1, noNaN: true }),
        fc.double({ min: 0, max: 1, maxExcluded: true, noNaN: true }),
        (interval, maxBackoff, failures, jitter, random) => {
          const delay = backoffDelay(interval, maxBackoff, failures, jitter, random)
          const next = backoffDelay(interval, maxBackoff, failures + 1, jitter, random)
          const cap = Math.max(interval, maxBackoff)
          expect(delay).toBeGreaterThanOrEqual(1)
          expect(delay).toBeLessThanOrEqual(Math.min(2 ** 31 - 1, Math.round(cap * (1 + jitter))))
          expect(next).toBeGreaterThanOrEqual(delay)
          if (failures <= 1) {
            expect(delay).toBe(backoffDelay(interval, maxBackoff, 0, jitter, random))
          }
        },
      ),
    )
  })
})
