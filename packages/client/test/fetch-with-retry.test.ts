import { once } from 'node:events'
import { createServer } from 'node:http'
import type { IncomingMessage, Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import { fetchWithRetry, withRetry } from '@floodgate/client'
import type { RetryEvent, RetryOptions } from '@floodgate/client'
import { refusedUrl } from './refused-url.js'

interface Scripted {
  status: number
  headers?: Record<string, string>
}

interface Seen {
  method: string
  body: string
}

// One real HTTP server; each test scripts the statuses it answers, then 200s.
let server: Server
let base: string
let script: Scripted[] = []
let seen: Seen[] = []

async function readBody(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = []
  for await (const chunk of req) chunks.push(chunk as Buffer)
  return Buffer.concat(chunks).toString('utf8')
}

beforeAll(async () => {
  server = createServer((req, res) => {
    void readBody(req).then((body) => {
      seen.push({ method: req.method ?? '', body })
      const next = script.shift() ?? { status: 200 }
      res.writeHead(next.status, { 'content-type': 'text/plain', ...next.headers })
      res.end(next.status === 200 ? 'ok' : 'refused')
    })
  })
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
})

afterAll(async () => {
  server.close()
  await once(server, 'close')
})

// Virtual time: sleeping advances the clock instantly and records the wait.
let now: number
let sleeps: number[]
let retries: RetryEvent[]

beforeEach(() => {
  script = []
  seen = []
  now = Date.parse('2026-11-22T00:00:00Z')
  sleeps = []
  retries = []
})

function opts(extra: RetryOptions = {}): RetryOptions {
  return {
    baseMs: 100,
    capMs: 10_000,
    random: () => 0.5,
    clock: () => now,
    sleep: (ms) => {
      sleeps.push(ms)
      now += ms
      return Promise.resolve()
    },
    onRetry: (event) => retries.push(event),
    ...extra,
  }
}

describe('fetchWithRetry against a real server', () => {
  it.each([429, 503])('retries a %i and returns the success', async (status) => {
    script = [{ status }, { status }]
    const res = await fetchWithRetry(`${base}/a`, undefined, opts())
    expect(res.status).toBe(200)
    expect(await res.text()).toBe('ok')
    expect(seen).toHaveLength(3)
    // random 0.5 of ceilings 100 and 200
    expect(sleeps).toEqual([50, 100])
    expect(retries.map((r) => [r.attempt, r.response?.status])).toEqual([
      [1, status],
      [2, status],
    ])
  })

  it('does not retry other statuses', async () => {
    script = [{ status: 500 }]
    const res = await fetchWithRetry(`${base}/a`, undefined, opts())
    expect(res.status).toBe(500)
    expect(seen).toHaveLength(1)
  })

  it('retryOn chooses the statuses', async () => {
    script = [{ status: 502 }, { status: 429 }]
    const res = await fetchWithRetry(`${base}/a`, undefined, opts({ retryOn: [502] }))
    expect(res.status).toBe(429)
    expect(seen).toHaveLength(2)
  })

  it('honours Retry-After in seconds', async () => {
    script = [{ status: 429, headers: { 'retry-after': '3' } }]
    const res = await fetchWithRetry(`${base}/a`, undefined, opts())
    expect(res.status).toBe(200)
    expect(sleeps).toEqual([3000])
    expect(retries[0]?.serverWaitMs).toBe(3000)
  })

  it('honours Retry-After as an HTTP date', async () => {
    const date = new Date(now + 7000).toUTCString()
    script = [{ status: 503, headers: { 'retry-after': date } }]
    await fetchWithRetry(`${base}/a`, undefined, opts())
    expect(sleeps).toEqual([7000])
  })

  it('honours the IETF RateLimit header (r=0;t=)', async () => {
    script = [{ status: 429, headers: { ratelimit: '"per-client";r=0;t=17' } }]
    await fetchWithRetry(`${base}/a`, undefined, opts())
    expect(sleeps).toEqual([17_000])
  })

  it('never waits less than the server asked, nor less than the backoff', async () => {
    script = [
      { status: 429, headers: { 'retry-after': '1' } },
      { status: 429, headers: { 'retry-after': '0' } },
    ]
    await fetchWithRetry(`${base}/a`, undefined, opts({ baseMs: 900, random: () => 0.999 }))
    // retry 1: max(1000 asked, 899.1 backoff); retry 2: max(0 asked, 1798.2 backoff)
    expect(sleeps[0]).toBe(1000)
    expect(sleeps[1]).toBeCloseTo(1798.2, 6)
  })

  it('caps the backoff and stops after maxAttempts, returning the last refusal', async () => {
    script = Array.from({ length: 10 }, () => ({ status: 429 }))
    const res = await fetchWithRetry(
      `${base}/a`,
      undefined,
      opts({ capMs: 300, maxAttempts: 6, jitter: 'none' }),
    )
    expect(res.status).toBe(429)
    expect(await res.text()).toBe('refused')
    expect(seen).toHaveLength(6)
    expect(sleeps).toEqual([100, 200, 300, 300, 300])
  })

  it('gives up at once when the server asks for more than the budget', async () => {
    script = [{ status: 429, headers: { 'retry-after': '30' } }]
    const res = await fetchWithRetry(`${base}/a`, undefined, opts({ maxTotalMs: 10_000 }))
    expect(res.status).toBe(429)
    expect(seen).toHaveLength(1)
    expect(sleeps).toEqual([])
  })

  it('never waits past maxTotalMs', async () => {
    script = Array.from({ length: 10 }, () => ({ status: 503 }))
    const res = await fetchWithRetry(
      `${base}/a`,
      undefined,
      opts({ baseMs: 1000, jitter: 'none', maxTotalMs: 2500, maxAttempts: 10 }),
    )
    expect(res.status).toBe(503)
    // 1000, then 2000 clamped to the 1500 left, then nothing left
    expect(sleeps).toEqual([1000, 1500])
    expect(seen).toHaveLength(3)
  })

  it('does not retry POST or PATCH by default', async () => {
    for (const method of ['POST', 'PATCH']) {
      script = [{ status: 429 }]
      seen = []
      const res = await fetchWithRetry(`${base}/a`, { method, body: 'x' }, opts())
      expect(res.status).toBe(429)
      expect(seen).toHaveLength(1)
    }
    expect(retries).toHaveLength(0)
  })

  it.each(['PUT', 'DELETE', 'HEAD', 'OPTIONS'])('retries idempotent %s', async (method) => {
    script = [{ status: 429 }]
    const res = await fetchWithRetry(`${base}/a`, { method }, opts())
    expect(res.status).toBe(200)
    expect(seen.map((s) => s.method)).toEqual([method, method])
  })

  it('retries POST when told, replaying the body', async () => {
    script = [{ status: 429 }]
    const res = await fetchWithRetry(
      `${base}/a`,
      { method: 'POST', body: '{"n":1}' },
      opts({ retryNonIdempotent: true }),
    )
    expect(res.status).toBe(200)
    expect(seen).toEqual([
      { method: 'POST', body: '{"n":1}' },
      { method: 'POST', body: '{"n":1}' },
    ])
  })

  it('replays the body of a Request object', async () => {
    script = [{ status: 503 }, { status: 503 }]
    const request = new Request(`${base}/a`, { method: 'PUT', body: 'payload' })
    const res = await fetchWithRetry(request, undefined, opts())
    expect(res.status).toBe(200)
    expect(seen.map((s) => s.body)).toEqual(['payload', 'payload', 'payload'])
  })

  it('sends a streaming body once: it cannot be replayed', async () => {
    script = [{ status: 429 }]
    const body = new ReadableStream<Uint8Array>({
      start(controller) {
        controller.enqueue(new TextEncoder().encode('stream'))
        controller.close()
      },
    })
    const init = { method: 'PUT', body, duplex: 'half' } as RequestInit
    const res = await fetchWithRetry(`${base}/a`, init, opts())
    expect(res.status).toBe(429)
    expect(seen).toEqual([{ method: 'PUT', body: 'stream' }])
  })

  it('an abort during the wait rejects at once and sends nothing more', async () => {
    script = [{ status: 429, headers: { 'retry-after': '60' } }]
    const controller = new AbortController()
    const pending = fetchWithRetry(`${base}/a`, undefined, {
      ...opts(),
      // A sleep that would never end: only the abort can finish the call.
      sleep: (ms) => {
        sleeps.push(ms)
        setImmediate(() => controller.abort())
        return new Promise<void>(() => {})
      },
      signal: controller.signal,
    })
    await expect(pending).rejects.toMatchObject({ name: 'AbortError' })
    expect(sleeps).toEqual([60_000])
    expect(seen).toHaveLength(1)
  })

  it('init.signal cancels the wait too, with the real sleep', async () => {
    script = [{ status: 429, headers: { 'retry-after': '30' } }]
    const controller = new AbortController()
    const pending = fetchWithRetry(
      `${base}/a`,
      { signal: controller.signal },
      { onRetry: () => setImmediate(() => controller.abort()) },
    )
    await expect(pending).rejects.toMatchObject({ name: 'AbortError' })
    expect(seen).toHaveLength(1)
  })

  it('combines options.signal and init.signal without AbortSignal.any (Node 20.0-20.2)', async () => {
    const original = AbortSignal.any
    Object.defineProperty(AbortSignal, 'any', { value: undefined, configurable: true })
    try {
      script = [{ status: 429, headers: { 'retry-after': '60' } }]
      const fromOptions = new AbortController()
      const fromInit = new AbortController()
      const pending = fetchWithRetry(
        `${base}/a`,
        { signal: fromInit.signal },
        {
          ...opts(),
          sleep: () => new Promise<void>(() => {}),
          onRetry: () => setImmediate(() => fromInit.abort()),
          signal: fromOptions.signal,
        },
      )
      await expect(pending).rejects.toMatchObject({ name: 'AbortError' })
      expect(seen).toHaveLength(1)
    } finally {
      Object.defineProperty(AbortSignal, 'any', { value: original, configurable: true })
    }
  })

  it.each([
    ['the Request', 'request'],
    ['init', 'init'],
    ['the signal option', 'option'],
  ] as const)(
    'with a signal on the Request, in init and in the options, aborting %s cancels the attempt in flight',
    async (_name, which) => {
      const controllers = {
        request: new AbortController(),
        init: new AbortController(),
        option: new AbortController(),
      }
      const reason = new Error(`${which} gave up`)
      let started!: () => void
      const inFlight = new Promise<void>((resolve) => (started = resolve))
      // A fetch double with fetch's own rule for the signal: init's replaces the Request's.
      const hangingFetch = (input: string | URL | Request, init?: RequestInit) => {
        const signal = new Request(input, init).signal
        started()
        return new Promise<Response>((_resolve, reject) => {
          signal.addEventListener('abort', () => reject(signal.reason as Error), { once: true })
        })
      }
      const pending = withRetry(hangingFetch, {
        ...opts(),
        signal: which === 'option' ? controllers.option.signal : undefined,
      })(new Request(`${base}/a`, { signal: controllers.request.signal }), {
        signal: controllers.init.signal,
      })
      await inFlight
      controllers[which].abort(reason)
      // Promptly: before the next turn of the event loop, not when the attempt ends by itself.
      const nextTurn = new Promise((resolve) => setImmediate(() => resolve('still in flight')))
      await expect(Promise.race([pending, nextTurn])).rejects.toBe(reason)
    },
  )

  it('an already aborted signal sends nothing', async () => {
    const controller = new AbortController()
    controller.abort()
    await expect(
      fetchWithRetry(`${base}/a`, undefined, opts({ signal: controller.signal })),
    ).rejects.toMatchObject({ name: 'AbortError' })
    expect(seen).toHaveLength(0)
  })

  it('an already aborted signal sends nothing even through a fetch that ignores signals', async () => {
    const reason = new Error('shutting down')
    const controller = new AbortController()
    controller.abort(reason)
    let calls = 0
    const deafFetch = (): Promise<Response> => {
      calls++
      return Promise.resolve(new Response('ok'))
    }
    for (const adaptiveThrottle of [false, true]) {
      const api = withRetry(deafFetch, opts({ adaptiveThrottle }))
      await expect(api(`${base}/a`, { signal: controller.signal })).rejects.toBe(reason)
      // Not retryable (POST) takes the other path: it must check too.
      await expect(api(`${base}/a`, { method: 'POST', signal: controller.signal })).rejects.toBe(
        reason,
      )
    }
    expect(calls).toBe(0)
  })

  describe('network errors', () => {
    let deadUrl: string
    beforeAll(async () => {
      deadUrl = await refusedUrl()
    })

    it('retries idempotent methods, then throws the last error', async () => {
      await expect(fetchWithRetry(deadUrl, undefined, opts({ maxAttempts: 3 }))).rejects.toThrow(
        TypeError,
      )
      expect(retries).toHaveLength(2)
      expect(retries[0]?.error).toBeInstanceOf(TypeError)
    })

    it('does not retry POST', async () => {
      await expect(fetchWithRetry(deadUrl, { method: 'POST' }, opts())).rejects.toThrow()
      expect(retries).toHaveLength(0)
    })

    it('retryNetworkErrors: false throws at once', async () => {
      await expect(
        fetchWithRetry(deadUrl, undefined, opts({ retryNetworkErrors: false })),
      ).rejects.toThrow()
      expect(retries).toHaveLength(0)
    })
  })

  it('withRetry wraps any fetch function', async () => {
    script = [{ status: 429 }]
    let calls = 0
    const fetchRetrying = withRetry((input, init) => {
      calls++
      return fetch(input, init)
    }, opts())
    const res = await fetchRetrying(new URL(`${base}/a`))
    expect(res.status).toBe(200)
    expect(calls).toBe(2)
  })

  it('refuses bad options at construction', () => {
    expect(() => withRetry(fetch, { maxAttempts: 0 })).toThrow(/maxAttempts/)
    expect(() => withRetry(fetch, { baseMs: -1 })).toThrow(/baseMs/)
  })
})
