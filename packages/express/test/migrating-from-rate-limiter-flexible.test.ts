import type { AddressInfo } from 'node:net'
import type { Server } from 'node:http'
import { afterEach, describe, expect, it, vi } from 'vitest'
import type { Express } from 'express'
import { MemoryStore, OptionsError, createLimiter, type Store } from '@floodgate/core'
import { coveredSnippets, docsHarness, readDoc, where } from '@floodgate/docs-snippets'

// The page's three apps (rate-limiter-flexible in a hand-written middleware, the same
// middleware on Floodgate's core limiter, and the Express adapter) run here through real
// HTTP and must agree: five requests pass, the sixth is refused with Retry-After.
const page = 'migrating-from-rate-limiter-flexible.md'
const [before, coreAfter, adapterAfter] = coveredSnippets(page, 3)
const { runner, itTypeChecks } = docsHarness(new URL('..', import.meta.url))

const routes = `
app.get('/', (_req, res) => res.json({ ok: true }))
export { app }`

/** Six requests to `/` against `app`: their statuses and the sixth response. */
async function sixRequests(app: Express) {
  const server: Server = app.listen(0, '127.0.0.1')
  await new Promise((resolve) => server.once('listening', resolve))
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  try {
    const statuses: number[] = []
    const remaining: (string | null)[] = []
    let sixth: Response | undefined
    for (let i = 0; i < 6; i++) {
      sixth = await fetch(`${base}/`)
      statuses.push(sixth.status)
      remaining.push(sixth.headers.get('x-ratelimit-remaining'))
      await sixth.arrayBuffer()
    }
    return { statuses, remaining, sixth: sixth! }
  } finally {
    await new Promise((resolve) => server.close(resolve))
  }
}

describe(`docs/${page}`, () => {
  afterEach(() => {
    vi.useRealTimers()
  })

  for (const snippet of [before!, coreAfter!, adapterAfter!]) {
    it(`${where(snippet)}: five pass, the sixth is refused`, async () => {
      // Floodgate's fixed windows are aligned to the clock: Date alone is frozen mid-minute,
      // so no minute ends between the first request and the sixth (timers stay real).
      vi.useFakeTimers({ toFake: ['Date'], now: Date.parse('2026-01-01T00:00:30Z') })
      const { app } = await runner.run(snippet, { after: routes })
      const { statuses, remaining, sixth } = await sixRequests(app as Express)
      expect(statuses).toEqual([200, 200, 200, 200, 200, 429])
      expect(remaining.slice(0, 5)).toEqual(['4', '3', '2', '1', '0'])
      const retryAfter = Number(sixth.headers.get('retry-after'))
      expect(retryAfter).toBeGreaterThan(0)
      expect(retryAfter).toBeLessThanOrEqual(60)
    })
  }

  it('the methods table: limit() throws at the call for a mistake, never resolves or rejects with it', async () => {
    expect(readDoc(page).replace(/\s+/g, ' ')).toContain(
      'It throws (an `OptionsError`, at the call, with any store) only for a mistake, such as an unknown rule id.',
    )
    const memory = new MemoryStore()
    // A store that answers later, as RedisStore does.
    const later: Store = {
      consume: (entries, nowMs) => Promise.resolve(memory.consume(entries, nowMs)),
      refund: (entries, nowMs) => memory.refund(entries, nowMs),
    }
    for (const store of [new MemoryStore(), later]) {
      const limiter = createLimiter({ rules: [{ id: 'per-ip', limit: 5, window: '1m' }], store })
      expect(() => limiter.limit('203.0.113.7', { rule: 'nope' })).toThrow(OptionsError)
      expect((await limiter.limit('203.0.113.7', { rule: 'per-ip' })).remaining).toBe(4)
      await limiter.close()
    }
  })

  itTypeChecks()
})
