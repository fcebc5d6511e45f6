import { describe, expect, it } from 'vitest'
import { withRetry } from '@floodgate/client'
import type { Jitter } from '@floodgate/client'

/** A small seeded PRNG (mulberry32) so the spread is reproducible. */
function seeded(seed: number): () => number {
  let a = seed >>> 0
  return () => {
    a = (a + 0x6d2b79f5) >>> 0
    let t = a
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

const CLIENTS = 100
const BASE_MS = 100

/**
 * 100 clients are refused at the same instant (t = 0) by a server that answers 429 to the
 * first three attempts of each. Each client runs on its own virtual clock; the function
 * returns the virtual times at which each client sent its 2nd and its 3rd attempt.
 */
async function burst(jitter: Jitter): Promise<{ second: number[]; third: number[] }> {
  const second: number[] = []
  const third: number[] = []
  await Promise.all(
    Array.from({ length: CLIENTS }, async (_, i) => {
      let now = 0
      let attempt = 0
      const server = (): Promise<Response> => {
        attempt++
        if (attempt === 2) second.push(now)
        if (attempt === 3) third.push(now)
        return Promise.resolve(new Response(null, { status: attempt <= 3 ? 429 : 200 }))
      }
      const fetchRetrying = withRetry(server, {
        baseMs: BASE_MS,
        jitter,
        random: seeded(i + 1),
        clock: () => now,
        sleep: (ms) => {
          now += ms
          return Promise.resolve()
        },
      })
      const res = await fetchRetrying('http://127.0.0.1/x')
      expect(res.status).toBe(200)
    }),
  )
  return { second, third }
}

/** Share of the clients in the fullest of `buckets` equal buckets over [0, spanMs]. */
function fullestBucketShare(times: readonly number[], spanMs: number, buckets = 10): number {
  const counts = new Array<number>(buckets).fill(0)
  for (const t of times) {
    const b = Math.min(buckets - 1, Math.floor((t / spanMs) * buckets))
    counts[b] = (counts[b] ?? 0) + 1
  }
  return Math.max(...counts) / times.length
}

describe('a burst of clients retrying', () => {
  it('with full jitter spreads the retries over the whole backoff interval', async () => {
    const { second, third } = await burst('full')
    // The 2nd attempt lands in [0, 100 ms), the 3rd in [0, 300 ms): ten buckets each.
    // A uniform spread puts ~10 % in each; lockstep would put 100 % in one.
    expect(fullestBucketShare(second, BASE_MS)).toBeLessThanOrEqual(0.2)
    expect(fullestBucketShare(third, 3 * BASE_MS)).toBeLessThanOrEqual(0.2)
    expect(new Set(second.map((t) => Math.round(t))).size).toBeGreaterThan(50)
  })

  it('without jitter every client retries at the same instant', async () => {
    const { second, third } = await burst('none')
    expect(new Set(second)).toEqual(new Set([100]))
    expect(new Set(third)).toEqual(new Set([300]))
    expect(fullestBucketShare(second, 2 * BASE_MS)).toBe(1)
  })
})
