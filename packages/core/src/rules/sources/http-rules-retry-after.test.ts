import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import fc from 'fast-check'
import { afterEach, describe, expect, it, vi } from 'vitest'
import { zeroCounts } from '../../limiter-counters.js'
import type { ReportingLimiter } from './host-report.js'
import { closedAfterEach } from './http-rules.test-util.js'
import { httpRules, retryAfterDelay } from './http-rules.js'

// A rules service that is overloaded or restarting says when to come back (`Retry-After` on a
// 503 or 429). The poller waits at least that long, within its own backoff cap, and never less
// than its backoff. Real HTTP on loopback; the clock and the poll timer are faked, so every
// gap between two polls is exact.

const RULES = JSON.stringify({ rules: [{ id: 'api', limit: 5, window: '1s' }] })

interface Answer {
  readonly status: number
  readonly retryAfter?: string | ((now: number) => string)
}

/** An endpoint that answers each request with the next scripted answer, then with rules. */
async function endpoint(script: Answer[]) {
  const seen: { method: string; at: number }[] = []
  const server: Server = createServer((req, res) => {
    req.resume()
    req.on('end', () => {
      seen.push({ method: req.method ?? '', at: Date.now() })
      const next = script.shift() ?? { status: 200 }
      res.statusCode = next.status
      if (next.retryAfter !== undefined) {
        const value =
          typeof next.retryAfter === 'string' ? next.retryAfter : next.retryAfter(Date.now())
        res.setHeader('retry-after', value)
      }
      if (next.status !== 200) return res.end('{"title":"busy"}')
      res.setHeader('etag', `"${seen.length}"`)
      res.setHeader('content-type', 'application/json')
      res.end(RULES)
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  servers.push(server)
  const { port } = server.address() as AddressInfo
  return { seen, url: `http://127.0.0.1:${port}/v1/services/api/ruleset` }
}

const { servers, sources } = closedAfterEach()
afterEach(() => {
  vi.useRealTimers()
})

const INTERVAL = 1000
const MAX_BACKOFF = 60_000

/**
 * Starts a poller on `script` and returns the gaps between its first `polls` requests. The fake
 * clock moves from timer to timer (the poll timer, and whatever timers fetch keeps); when one
 * starts a poll, that poll is awaited before the clock moves on.
 */
async function gaps(
  script: Answer[],
  polls: number,
  options: Parameters<typeof httpRules>[1] = {},
): Promise<{ gaps: number[]; methods: string[] }> {
  vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'Date'], now: Date.UTC(2026, 0, 1) })
  const { seen, url } = await endpoint(script)
  const calls: number[] = []
  const source = httpRules(url, {
    intervalMs: INTERVAL,
    maxBackoffMs: MAX_BACKOFF,
    jitter: 0,
    timeoutMs: 600_000,
    ...options,
    fetch: (input, init) => {
      calls.push(Date.now())
      return fetch(input, init)
    },
  })
  sources.push(source)
  // A limiter with counts, so a poller with `report` POSTs a report after its first poll.
  const limiter: ReportingLimiter = {
    counters: () => ({
      total: zeroCounts(),
      byRule: new Map([['api', { ...zeroCounts(), allowed: 1 }]]),
      inFlight: new Map(),
    }),
  }
  await source.start(
    () => {},
    () => {},
    limiter,
  )
  for (let step = 0; calls.length < polls && step < 10_000; step++) {
    const before = calls.length
    await vi.advanceTimersToNextTimerAsync()
    // The timer started a poll: poll() joins it rather than starting another.
    if (calls.length > before) await source.poll()
  }
  return {
    gaps: calls.slice(1, polls).map((at, i) => at - calls[i]!),
    methods: seen.map((s) => s.method),
  }
}

describe('httpRules and Retry-After', () => {
  it('waits the seconds a 503 asks for instead of its shorter backoff', async () => {
    const { gaps: g } = await gaps([{ status: 503, retryAfter: '30' }], 3)
    // After the 503 the backoff alone would be the interval (1 s); the service asked for 30 s.
    expect(g).toEqual([30_000, INTERVAL])
  })

  it('waits until the HTTP date a 429 names', async () => {
    const { gaps: g } = await gaps(
      [{ status: 429, retryAfter: (now) => new Date(now + 45_000).toUTCString() }],
      2,
    )
    expect(g).toEqual([45_000])
  })

  it('never waits less than its own backoff, whatever the service asks', async () => {
    // Three failures in a row: backoff 1 s, 2 s, 4 s. Asks of 0 s and a past date are floors
    // below it; the 3 s ask is below the third backoff (4 s).
    const { gaps: g } = await gaps(
      [
        { status: 503, retryAfter: '0' },
        { status: 503, retryAfter: 'Thu, 01 Jan 1970 00:00:00 GMT' },
        { status: 503, retryAfter: '3' },
      ],
      4,
    )
    expect(g).toEqual([1000, 2000, 4000])
  })

  it('waits no longer than maxBackoffMs when the service asks for more', async () => {
    const { gaps: g } = await gaps([{ status: 503, retryAfter: '86400' }], 2)
    expect(g).toEqual([MAX_BACKOFF])
  })

  it('ignores Retry-After on other failures and on a value it cannot read', async () => {
    const { gaps: g } = await gaps(
      [
        { status: 500, retryAfter: '30' },
        { status: 503, retryAfter: 'soon' },
      ],
      3,
    )
    expect(g).toEqual([1000, 2000])
  })

  it('honours it on the report POST too, and does not poll plainly at once after a 429 to it', async () => {
    const { gaps: g, methods } = await gaps(
      [{ status: 200 }, { status: 429, retryAfter: '20' }],
      3,
      { report: true },
    )
    // The first poll is plain (nothing to report yet), the next ones POST the report; a 429 to
    // the report is the service being busy, not refusing reports: no plain GET right after it.
    expect(methods).toEqual(['GET', 'POST', 'POST'])
    expect(g).toEqual([INTERVAL, 20_000])
  })
})

describe('retryAfterDelay', () => {
  it('is at least the backoff, at least the ask within the cap, and at most the larger of the backoff and the jittered cap', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 2 ** 31 - 1 }),
        fc.option(fc.double({ min: 0, max: 1e12, noNaN: true }), { nil: undefined }),
        fc.integer({ min: 1, max: 2 ** 31 - 1 }),
        fc.double({ min: 0, max: 1, noNaN: true }),
        fc.double({ min: 0, max: 1, maxExcluded: true, noNaN: true }),
        (backoff, asked, cap, jitter, random) => {
          const delay = retryAfterDelay(backoff, asked, cap, jitter, random)
          expect(Number.isInteger(delay)).toBe(true)
          expect(delay).toBeGreaterThanOrEqual(backoff)
          expect(delay).toBeLessThanOrEqual(2 ** 31 - 1)
          expect(delay).toBeLessThanOrEqual(
            Math.max(backoff, Math.min(2 ** 31 - 1, Math.ceil(cap * (1 + jitter)))),
          )
          if (asked === undefined) expect(delay).toBe(backoff)
          else expect(delay).toBeGreaterThanOrEqual(Math.min(Math.ceil(asked), cap))
        },
      ),
    )
  })
})
