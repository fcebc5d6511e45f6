import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { withRetry } from '@floodgate/client'

describe('the time budget (maxTotalMs)', () => {
  it('bounds the waits in all, whatever the wall clock does between attempts (property)', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 0, max: 120_000 }),
        // What the server asks on each refusal: nothing, or Retry-After seconds.
        fc.array(fc.option(fc.integer({ min: 0, max: 90 })), { minLength: 1, maxLength: 12 }),
        // How far the wall clock moves during each wait: forward, not at all, or back (an NTP
        // step), independent of how long the wait really was.
        fc.array(fc.integer({ min: -7_200_000, max: 7_200_000 }), { minLength: 12, maxLength: 12 }),
        fc.double({ min: 0, max: 1, maxExcluded: true, noNaN: true }),
        async (maxTotalMs, asks, jumps, draw) => {
          let now = Date.UTC(2026, 10, 28)
          let attempt = 0
          const waits: number[] = []
          const refuse = (): Promise<Response> => {
            const ask = asks[attempt++ % asks.length]
            const headers =
              ask === null || ask === undefined ? undefined : { 'retry-after': `${ask}` }
            return Promise.resolve(new Response(null, { status: 429, headers }))
          }
          const res = await withRetry(refuse, {
            maxAttempts: 12,
            maxTotalMs,
            capMs: 60_000,
            random: () => draw,
            clock: () => now,
            sleep: (ms) => {
              waits.push(ms)
              now += jumps[waits.length - 1] ?? 0
              return Promise.resolve()
            },
          })('http://127.0.0.1:1/a')
          expect(res.status).toBe(429)
          const total = waits.reduce((a, b) => a + b, 0)
          expect(total).toBeLessThanOrEqual(maxTotalMs)
        },
      ),
    )
  })
})

describe('a quota reset sent as a Unix time', () => {
  it('waits until then and retries, instead of giving up as if asked to wait 54 years', async () => {
    const now = Date.UTC(2026, 10, 28, 12, 0, 0)
    const reset = String(now / 1000 + 30)
    const answers = [
      new Response(null, {
        status: 429,
        headers: { 'ratelimit-remaining': '0', 'ratelimit-reset': reset },
      }),
      new Response('ok'),
    ]
    let sent = 0
    const waits: number[] = []
    const res = await withRetry(() => Promise.resolve(answers[sent++]!), {
      clock: () => now,
      random: () => 0,
      sleep: (ms) => {
        waits.push(ms)
        return Promise.resolve()
      },
    })('http://127.0.0.1:1/a')
    // Before: 429 after one call, the ask (1,795,867,230 s) being past the 60 s budget.
    expect({ status: res.status, sent, waits }).toEqual({ status: 200, sent: 2, waits: [30_000] })
  })
})
