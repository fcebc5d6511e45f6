import { once } from 'node:events'
import { readFile } from 'node:fs/promises'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { afterAll, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest'
import {
  createAdaptiveThrottle,
  createPacer,
  fetchWithRetry,
  LocallyRefusedResponse,
  withRetry,
} from '@floodgate/client'

// The snippets of docs/client.md, verbatim between the `// doc:` markers; the last test
// checks that the page still shows exactly this code.

let baseUrl: string
const seen = new Map<string, number>()
const server = createServer((req, res) => {
  // Refuse the first request to each URL, so each snippet retries once (after at most 200 ms).
  const count = seen.get(req.url ?? '') ?? 0
  seen.set(req.url ?? '', count + 1)
  if (count === 0) {
    res.writeHead(429)
    res.end()
    return
  }
  res.writeHead(200, { 'content-type': 'application/json' })
  res.end(JSON.stringify({ path: req.url }))
})

beforeAll(async () => {
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
})
afterAll(() => {
  server.close()
})
// The snippets log what they got; keep the test output clean.
beforeEach(() => {
  vi.spyOn(console, 'log').mockImplementation(() => {})
  vi.spyOn(console, 'warn').mockImplementation(() => {})
})

describe('docs/client.md snippets', () => {
  it('fetchWithRetry', async () => {
    // doc: fetch-with-retry
    const res = await fetchWithRetry(`${baseUrl}/items`, undefined, {
      maxAttempts: 4,
      maxTotalMs: 10_000,
    })
    console.log(res.status, await res.json())
    // doc: end
    expect(res.status).toBe(200)
  })

  it('withRetry', async () => {
    // doc: with-retry
    const api = withRetry(fetch, {
      baseMs: 200,
      capMs: 5_000,
      onRetry: ({ attempt, delayMs, response }) =>
        console.warn(`attempt ${attempt} got ${response?.status}; retrying in ${delayMs} ms`),
    })
    const res = await api(`${baseUrl}/export`, { headers: { 'x-api-key': 'tenant-a' } })
    // doc: end
    expect(res.status).toBe(200)
  })

  it('POST with an idempotency key', async () => {
    // doc: post
    const res = await fetchWithRetry(
      `${baseUrl}/orders`,
      {
        method: 'POST',
        headers: { 'idempotency-key': crypto.randomUUID(), 'content-type': 'application/json' },
        body: JSON.stringify({ sku: 'A-1', quantity: 2 }),
      },
      // Safe: the server de-duplicates by the idempotency key.
      { retryNonIdempotent: true },
    )
    // doc: end
    expect(res.status).toBe(200)
  })

  it('cancelling', async () => {
    // doc: abort
    const controller = new AbortController()
    const pending = fetchWithRetry(`${baseUrl}/slow`, { signal: controller.signal })
    controller.abort() // cancels the request in flight or the wait between attempts
    await pending.catch((error: Error) => console.log(error.name)) // AbortError
    // doc: end
    await expect(pending).rejects.toMatchObject({ name: 'AbortError' })
  })

  it('adaptive throttling', async () => {
    // Spend the URL's refusal first: with nothing refused, the throttle decides nothing at
    // random.
    await (await fetch(`${baseUrl}/search?q=boots`)).arrayBuffer()
    // doc: adaptive-throttle
    const api = withRetry(fetch, { adaptiveThrottle: { k: 2, windowMs: 120_000 } })
    const res = await api(`${baseUrl}/search?q=boots`)
    if (res instanceof LocallyRefusedResponse) console.warn('not sent: the server is overloaded')
    // doc: end
    expect(res.status).toBe(200)
  })

  it('one throttle shared by two wrappers', async () => {
    await (await fetch(`${baseUrl}/search`)).arrayBuffer()
    // doc: shared-throttle
    const throttle = createAdaptiveThrottle({ k: 2 })
    const search = withRetry(fetch, { adaptiveThrottle: throttle })
    const suggest = withRetry(fetch, { adaptiveThrottle: throttle, maxAttempts: 2 })
    // doc: end
    expect((await search(`${baseUrl}/search`)).status).toBe(200)
    expect((await suggest(`${baseUrl}/suggest`)).status).toBe(200)
    // Both wrappers count into the one throttle: search's 200, suggest's 429 and its retry.
    expect(throttle.counts()).toMatchObject({ requests: 3, accepts: 2 })
  })

  it('pacing calls', async () => {
    const started = Date.now()
    // doc: pacer
    const pacer = createPacer({ rate: 20, burst: 5 }) // 20 calls per second, at most 5 saved up
    for (const id of ['a', 'b', 'c']) {
      await pacer.acquire() // resolves when it is this caller's turn
      await fetch(`${baseUrl}/items/${id}`)
    }
    // doc: end
    // A new pacer has nothing saved: the calls go 50 ms apart.
    expect(Date.now() - started).toBeGreaterThanOrEqual(95)
  })

  it('a warming-up pacer and tryAcquire', async () => {
    // doc: pacer-warmup
    const pacer = createPacer({ rate: 50, warmup: 2_000 })
    const ok = await pacer.tryAcquire(1, { timeoutMs: 100, signal: AbortSignal.timeout(1_000) })
    if (!ok) console.warn('busy: try again later')
    // doc: end
    expect(ok).toBe(true)
  })

  it('docs/client.md shows these snippets verbatim', async () => {
    const page = await readFile(new URL('../../../docs/client.md', import.meta.url), 'utf8')
    const source = await readFile(new URL(import.meta.url), 'utf8')
    const blocks = [...source.matchAll(/\/\/ doc: ([a-z-]+)\n([\s\S]*?)\n\s*\/\/ doc: end/g)]
    expect(blocks.length).toBe(8)
    // Indentation may differ (a snippet inside a list item), so lines are compared trimmed.
    const flat = (text: string): string =>
      text
        .split('\n')
        .map((line) => line.trim())
        .join('\n')
    for (const [, name, body] of blocks) {
      expect(flat(page), `snippet '${name}' missing from docs/client.md`).toContain(flat(body!))
    }
  })
})
