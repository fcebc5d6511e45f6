import { describe, expect, it } from 'vitest'
import { withRetry } from '@floodgate/client'
import type { RetryOptions } from '@floodgate/client'
import { seeded } from './seeded-random.js'
import { VirtualTime } from './virtual-time.js'

// A fleet of retrying clients against a struggling server, all on one virtual clock: the
// server accepts CAPACITY requests per second and answers 429 to the rest. The clients offer
// six times that, each call retried up to twice. The simulation is deterministic (seeded
// random sources, virtual time) and bounded (DURATION_MS of virtual time).

const CAPACITY = 25 // accepted per second
const CLIENTS = 10
const CALLS_PER_CLIENT_PER_S = 15 // 150/s offered in all: 6 × CAPACITY
const DURATION_MS = 40_000
const MEASURE_FROM_MS = 20_000 // the second half, once the window has filled twice
const WINDOW_MS = 10_000

interface Load {
  /** Attempts the server received per second over the measured stretch. */
  readonly seenPerS: number
  /** Attempts it accepted per second. */
  readonly acceptedPerS: number
  /** Calls that ended refused locally per second. */
  readonly refusedLocallyPerS: number
}

async function simulate(adaptiveThrottle: RetryOptions['adaptiveThrottle']): Promise<Load> {
  const time = new VirtualTime()
  let second = -1
  let acceptedThisSecond = 0
  let seen = 0
  let accepted = 0
  let refusedLocally = 0

  const server = (): Promise<Response> => {
    const now = time.clock()
    const s = Math.floor(now / 1000)
    if (s !== second) {
      second = s
      acceptedThisSecond = 0
    }
    const measured = now >= MEASURE_FROM_MS && now < DURATION_MS
    if (measured) seen++
    if (acceptedThisSecond < CAPACITY) {
      acceptedThisSecond++
      if (measured) accepted++
      return Promise.resolve(new Response('ok'))
    }
    return Promise.resolve(new Response('busy', { status: 429 }))
  }

  const drivers = Array.from({ length: CLIENTS }, async (_, i) => {
    const api = withRetry(server, {
      maxAttempts: 3,
      baseMs: 100,
      capMs: 1000,
      clock: time.clock,
      sleep: time.sleep,
      random: seeded(1000 + i),
      adaptiveThrottle,
    })
    const arrivals = seeded(i + 1)
    const calls: Promise<void>[] = []
    const meanGapMs = 1000 / CALLS_PER_CLIENT_PER_S
    while (time.clock() < DURATION_MS) {
      await time.sleep(arrivals() * 2 * meanGapMs)
      if (time.clock() >= DURATION_MS) break
      calls.push(
        api('http://127.0.0.1/work').then((res) => {
          if (
            'refusedLocally' in res &&
            time.clock() < DURATION_MS &&
            time.clock() >= MEASURE_FROM_MS
          ) {
            refusedLocally++
          }
        }),
      )
    }
    await Promise.all(calls)
  })
  // Past the end the drivers stop; the last retries (at most 1.1 s of backoff) drain.
  await time.runUntil(DURATION_MS + 5_000)
  await Promise.all(drivers)
  expect(time.pending()).toBe(0)
  const seconds = (DURATION_MS - MEASURE_FROM_MS) / 1000
  const load = {
    seenPerS: seen / seconds,
    acceptedPerS: accepted / seconds,
    refusedLocallyPerS: refusedLocally / seconds,
  }
  // FG_MEASURE_FLEET=1 prints the figures docs/client.md quotes.
  if (process.env.FG_MEASURE_FLEET === '1') {
    console.log(`adaptiveThrottle ${JSON.stringify(adaptiveThrottle)}: ${JSON.stringify(load)}`)
  }
  return load
}

describe('a fleet of retrying clients against a server that accepts 25 requests/s', () => {
  it('without adaptive throttling, the server sees far more than it accepts', async () => {
    const load = await simulate(false)
    expect(load.acceptedPerS).toBeCloseTo(CAPACITY, 0)
    // Offered 150/s, and every refused call retried: the server refuses most of its load.
    expect(load.seenPerS / load.acceptedPerS).toBeGreaterThan(8)
    expect(load.refusedLocallyPerS).toBe(0)
  })

  it.each([2, 1.5])(
    'with adaptive throttling (k = %d), the load the server sees converges near k × accepts',
    async (k) => {
      const load = await simulate({ k, windowMs: WINDOW_MS })
      expect(load.acceptedPerS).toBeCloseTo(CAPACITY, 0)
      const ratio = load.seenPerS / load.acceptedPerS
      expect(ratio).toBeGreaterThan(k * 0.9)
      expect(ratio).toBeLessThan(k * 1.1)
      expect(load.refusedLocallyPerS).toBeGreaterThan(0)
    },
  )
})
