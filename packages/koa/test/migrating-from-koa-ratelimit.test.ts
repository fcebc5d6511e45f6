import type { Server } from 'node:http'
import { afterEach, describe, expect, it, vi } from 'vitest'
import type Koa from 'koa'
import { baseUrl, coveredSnippets, docsHarness, readDoc, where } from '@floodgate/docs-snippets'

// The page's before (koa-ratelimit itself) and after (Floodgate) apps run here through real
// HTTP and must agree: five requests pass, the sixth is refused with the same status, text
// body and X-RateLimit-* headers.
const page = 'migrating-from-koa-ratelimit.md'
const [before, after] = coveredSnippets(page, 2)
const { runner, itTypeChecks } = docsHarness(new URL('..', import.meta.url))

const routes = `
app.use((ctx) => {
  ctx.body = { ok: true }
})
export { app }`

/** Six requests to `/` against `app`: their statuses and the sixth response and body. */
async function sixRequests(app: Koa) {
  const server: Server = app.listen(0, '127.0.0.1')
  await new Promise((resolve) => server.once('listening', resolve))
  try {
    const statuses: number[] = []
    let sixth: Response | undefined
    for (let i = 0; i < 6; i++) {
      sixth = await fetch(`${baseUrl(server)}/`)
      statuses.push(sixth.status)
      if (i < 5) await sixth.arrayBuffer()
    }
    return { statuses, sixth: sixth!, body: await sixth!.text(), nowS: Date.now() / 1000 }
  } finally {
    await new Promise((resolve) => server.close(resolve))
  }
}

describe(`docs/${page}`, () => {
  afterEach(() => {
    vi.useRealTimers()
  })

  it(`${where(before!)} and ${where(after!)}: the same limit, body and headers`, async () => {
    // Floodgate's fixed windows are aligned to the clock: Date alone is frozen mid-minute, so
    // no minute ends between the first request and the sixth (timers stay real).
    vi.useFakeTimers({ toFake: ['Date'], now: Date.parse('2026-01-01T00:00:30Z') })
    const peer = await sixRequests((await runner.run(before!, { after: routes })).app as Koa)
    const fg = await sixRequests((await runner.run(after!, { after: routes })).app as Koa)
    for (const { statuses, sixth, body, nowS } of [peer, fg]) {
      expect(statuses).toEqual([200, 200, 200, 200, 200, 429])
      expect(sixth.headers.get('x-ratelimit-limit')).toBe('5')
      expect(sixth.headers.get('x-ratelimit-remaining')).toBe('0')
      const retryAfter = Number(sixth.headers.get('retry-after'))
      expect(retryAfter).toBeGreaterThan(0)
      expect(retryAfter).toBeLessThanOrEqual(60)
      // Epoch seconds in both.
      const resetAt = Number(sixth.headers.get('x-ratelimit-reset'))
      expect(resetAt).toBeGreaterThan(nowS - 1)
      expect(resetAt).toBeLessThanOrEqual(nowS + 61)
      expect(body).toMatch(/^Rate limit exceeded, retry in .+\.$/)
    }
    expect(Number.isInteger(Number(fg.sixth.headers.get('x-ratelimit-reset')))).toBe(true)
    expect(readDoc(page)).toContain('`X-RateLimit-Reset` is epoch seconds\nin both')
  })

  it("the table's throw row: Koa's own error handler answers the refusal with Retry-After and the RateLimit headers, as koa-ratelimit's throw: true does", async () => {
    const row =
      'onRejected: (ctx, { status, body }) =>\n  ctx.throw(status, body.detail, { headers: ctx.response.headers })'
    expect(readDoc(page).replace(/\s+/g, ' ')).toContain(row.replace(/\s+/g, ' '))
    vi.useFakeTimers({ toFake: ['Date'], now: Date.parse('2026-01-01T00:00:30Z') })
    // No error middleware: Koa's onerror clears every header it is not given in the error.
    const peer = await sixRequests(
      (
        await runner.run(
          {
            ...before!,
            code: before!.code.replace('max: 5 }', 'max: 5, throw: true }'),
          },
          { after: routes },
        )
      ).app as Koa,
    )
    const throwing = after!.code.replace(/onRejected: [\s\S]*?seconds\.`\n\s*\},/, `${row},`)
    expect(throwing).toContain('ctx.throw')
    const fg = await sixRequests(
      (await runner.run({ ...after!, code: throwing }, { after: routes })).app as Koa,
    )
    for (const { statuses, sixth, body } of [peer, fg]) {
      expect(statuses).toEqual([200, 200, 200, 200, 200, 429])
      expect(Number(sixth.headers.get('retry-after'))).toBeGreaterThan(0)
      expect(sixth.headers.get('x-ratelimit-remaining')).toBe('0')
      expect(body).toMatch(/^Rate limit exceeded/)
    }
  })

  itTypeChecks()
})
