import { afterEach, describe, expect, it, vi } from 'vitest'
import type { FastifyInstance } from 'fastify'
import { baseUrl, coveredSnippets, docsHarness, readDoc, where } from '@floodgate/docs-snippets'

// The page's before (@fastify/rate-limit itself) and after (Floodgate) apps run here through
// real HTTP: five requests pass, the sixth is refused with the same status, body shape and
// X-RateLimit-* headers (but for X-RateLimit-Reset, which the page says differs), and the
// exempt route is never limited.
const page = 'migrating-from-fastify-rate-limit.md'
const [before, after] = coveredSnippets(page, 2)
const { runner, itTypeChecks } = docsHarness(new URL('..', import.meta.url))

/** Six requests to `/`, then one to `/health`, against the app a snippet built. */
async function sixRequests(app: FastifyInstance) {
  try {
    await app.listen({ port: 0, host: '127.0.0.1' })
    const base = baseUrl(app.server)
    const statuses: number[] = []
    let sixth: Response | undefined
    for (let i = 0; i < 6; i++) {
      sixth = await fetch(`${base}/`)
      statuses.push(sixth.status)
      if (i < 5) await sixth.arrayBuffer()
    }
    const body: unknown = await sixth!.json()
    const health = await fetch(`${base}/health`)
    return { statuses, sixth: sixth!, body, health, nowS: Date.now() / 1000 }
  } finally {
    await app.close()
  }
}

describe(`docs/${page}`, () => {
  // Floodgate's fixed windows are aligned to the clock: a minute that ended between the first
  // and the sixth request would let the sixth through. Date alone is frozen, mid-minute (timers
  // stay real, so HTTP works); both limiters read it.
  const midMinute = () =>
    vi.useFakeTimers({ toFake: ['Date'], now: Date.parse('2026-01-01T00:00:30Z') })
  afterEach(() => {
    vi.useRealTimers()
  })

  it(`${where(before!)} and ${where(after!)}: the same limit, body and headers`, async () => {
    midMinute()
    const peer = await sixRequests(
      (await runner.run(before!, { after: 'export { app }' })).app as FastifyInstance,
    )
    const fg = await sixRequests(
      (await runner.run(after!, { after: 'export { app }' })).app as FastifyInstance,
    )
    for (const { statuses, sixth, body, health } of [peer, fg]) {
      expect(statuses).toEqual([200, 200, 200, 200, 200, 429])
      expect(sixth.headers.get('x-ratelimit-limit')).toBe('5')
      expect(sixth.headers.get('x-ratelimit-remaining')).toBe('0')
      expect(Number(sixth.headers.get('retry-after'))).toBeGreaterThan(0)
      expect(Number(sixth.headers.get('retry-after'))).toBeLessThanOrEqual(60)
      expect(body).toMatchObject({ statusCode: 429, error: 'Too Many Requests' })
      expect((body as { message: string }).message).toMatch(/^Rate limit exceeded, retry in /)
      expect(health.status).toBe(200)
      expect(health.headers.get('x-ratelimit-limit')).toBeNull()
    }
    // X-RateLimit-Reset: the seconds left in the window before, an epoch time after.
    expect(Number(peer.sixth.headers.get('x-ratelimit-reset'))).toBeLessThanOrEqual(60)
    const resetAt = Number(fg.sixth.headers.get('x-ratelimit-reset'))
    expect(resetAt).toBeGreaterThan(fg.nowS - 1)
    expect(resetAt).toBeLessThanOrEqual(fg.nowS + 61)
    expect(readDoc(page)).toContain('**`X-RateLimit-Reset`\nis epoch seconds in Floodgate**')
  })

  itTypeChecks()
})
