import type { AddressInfo } from 'node:net'
import type { Server } from 'node:http'
import { afterEach, describe, expect, it, vi } from 'vitest'
import express, { type Express } from 'express'
import { rateLimit } from '@floodgate/express'
import { coveredSnippets, docsHarness, readDoc, where } from '@floodgate/docs-snippets'

// The page's before (express-rate-limit itself) and after (Floodgate) apps run here through
// real HTTP, and must answer the same: five requests pass, the sixth is refused with the same
// draft-7 headers, and the skipped route is never limited.
const page = 'migrating-from-express-rate-limit.md'
const [before, after] = coveredSnippets(page, 2)
const { runner, itTypeChecks } = docsHarness(new URL('..', import.meta.url))

const routes = `
app.get('/health', (_req, res) => res.json({ ok: true }))
app.get('/', (_req, res) => res.json({ ok: true }))
export { app }`

async function serve(app: Express): Promise<{ base: string; close: () => Promise<void> }> {
  const server: Server = app.listen(0, '127.0.0.1')
  await new Promise((resolve) => server.once('listening', resolve))
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  return { base, close: () => new Promise((resolve) => server.close(() => resolve())) }
}

/** Six requests to `/`, then one to `/health`; what the sixth and the health check answered. */
async function sixRequests(app: Express) {
  const { base, close } = await serve(app)
  try {
    const statuses: number[] = []
    const responses: Response[] = []
    for (let i = 0; i < 6; i++) {
      const res = await fetch(`${base}/`)
      statuses.push(res.status)
      responses.push(res)
      await res.arrayBuffer()
    }
    const health = await fetch(`${base}/health`)
    return { statuses, first: responses[0]!, sixth: responses[5]!, health }
  } finally {
    await close()
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

  it(`${where(before!)} and ${where(after!)}: the same limit and the same headers`, async () => {
    midMinute()
    const erl = await sixRequests((await runner.run(before!, { after: routes })).app as Express)
    const fg = await sixRequests((await runner.run(after!, { after: routes })).app as Express)
    for (const { statuses, first, sixth, health } of [erl, fg]) {
      expect(statuses).toEqual([200, 200, 200, 200, 200, 429])
      expect(first.headers.get('ratelimit-policy')).toBe('5;w=60')
      expect(first.headers.get('ratelimit')).toMatch(/^limit=5, remaining=4, reset=\d+$/)
      expect(sixth.headers.get('ratelimit-policy')).toBe('5;w=60')
      expect(sixth.headers.get('ratelimit')).toMatch(/^limit=5, remaining=0, reset=\d+$/)
      expect(Number(sixth.headers.get('retry-after'))).toBeGreaterThan(0)
      expect(Number(sixth.headers.get('retry-after'))).toBeLessThanOrEqual(60)
      expect(sixth.headers.get('x-ratelimit-remaining')).toBeNull()
      expect(health.status).toBe(200)
      expect(health.headers.get('ratelimit')).toBeNull()
    }
    // The page's sentence about the bodies.
    expect(readDoc(page)).toContain('`Too many requests, please try again\nlater.`')
  })

  it('the default token bucket lets a sixth request through 12 s later; a fixed window does not', async () => {
    expect(readDoc(page)).toContain('a sixth request passes 12 s\nafter the first five')
    // A whole minute of epoch time: 12 s later is inside the same fixed window, however aligned.
    let now = 1_700_000_040_000
    const clock = () => now
    const app = express()
    app.use('/bucket', rateLimit([{ id: 'bucket', limit: 5, window: '1m' }], { clock }))
    app.use(
      '/fixed',
      rateLimit([{ id: 'fixed', algorithm: 'fixed-window', limit: 5, window: '1m' }], { clock }),
    )
    app.get('/{*rest}', (_req, res) => res.json({ ok: true }))
    const { base, close } = await serve(app)
    try {
      const status = async (path: string) => {
        const res = await fetch(`${base}${path}`)
        await res.arrayBuffer()
        return res.status
      }
      for (const path of ['/bucket', '/fixed']) {
        for (let i = 0; i < 5; i++) expect(await status(path)).toBe(200)
        expect(await status(path)).toBe(429)
      }
      now += 12_000
      expect(await status('/bucket')).toBe(200)
      expect(await status('/fixed')).toBe(429)
    } finally {
      await close()
    }
  })

  it("fixed windows: express-rate-limit's starts at the client's first request, Floodgate's on the minute", async () => {
    expect(readDoc(page).replace(/\s+/g, ' ')).toContain(
      "Floodgate's fixed windows are aligned to the clock (every client's minute starts on the minute), not to each client's first request",
    )
    vi.useFakeTimers({ toFake: ['Date'], now: Date.parse('2026-01-01T00:00:50Z') })
    const apps = {
      erl: (await runner.run(before!, { after: routes })).app as Express,
      fg: (await runner.run(after!, { after: routes })).app as Express,
    }
    const statuses: Record<string, number[]> = {}
    for (const [name, app] of Object.entries(apps)) {
      vi.setSystemTime(Date.parse('2026-01-01T00:00:50Z'))
      const { base, close } = await serve(app)
      try {
        const status = async () => {
          const res = await fetch(`${base}/`)
          await res.arrayBuffer()
          return res.status
        }
        const seen: number[] = []
        for (let i = 0; i < 6; i++) seen.push(await status())
        // 15 s later: the next minute for Floodgate, the same window for express-rate-limit.
        vi.setSystemTime(Date.parse('2026-01-01T00:01:05Z'))
        seen.push(await status())
        statuses[name] = seen
      } finally {
        await close()
      }
    }
    expect(statuses).toEqual({
      erl: [200, 200, 200, 200, 200, 429, 429],
      fg: [200, 200, 200, 200, 200, 429, 200],
    })
  })

  itTypeChecks()
})
