import { once } from 'node:events'
import { createServer } from 'node:http'
import type { Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import { createAdaptiveThrottle, LocallyRefusedResponse, withRetry } from '@floodgate/client'
import type { RetryEvent, RetryOptions } from '@floodgate/client'

// withRetry's adaptiveThrottle against a real node:http server on 127.0.0.1 that answers
// `status` to everything; time is virtual (injected clock and sleep).

let server: Server
let base: string
let status = 200
let received = 0

beforeAll(async () => {
  server = createServer((req, res) => {
    received++
    req.resume()
    res.writeHead(status, { 'content-type': 'text/plain' })
    res.end(status === 200 ? 'ok' : 'refused')
  })
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
})

afterAll(async () => {
  server.close()
  await once(server, 'close')
})

let now: number
let retries: RetryEvent[]

beforeEach(() => {
  status = 200
  received = 0
  now = 0
  retries = []
})

function opts(extra: RetryOptions = {}): RetryOptions {
  return {
    random: () => 0,
    clock: () => now,
    sleep: (ms) => {
      now += ms
      return Promise.resolve()
    },
    onRetry: (event) => retries.push(event),
    ...extra,
  }
}

describe('withRetry({ adaptiveThrottle })', () => {
  it('is off by default: every attempt reaches the server', async () => {
    status = 429
    const api = withRetry(fetch, opts({ maxAttempts: 2 }))
    for (let i = 0; i < 10; i++) await api(base)
    expect(received).toBe(20)
  })

  it('refuses locally once the server refuses more than it accepts, with a 429 that says so', async () => {
    status = 429
    const throttle = createAdaptiveThrottle({ clock: () => now, random: () => 0 })
    const api = withRetry(fetch, opts({ maxAttempts: 1, adaptiveThrottle: throttle }))
    // The first request always goes out (nothing counted yet); after it, p = 1/2 > random 0.
    const first = await api(base)
    expect(first.status).toBe(429)
    expect(first).not.toBeInstanceOf(LocallyRefusedResponse)
    const second = await api(base)
    expect(received).toBe(1)
    expect(second).toBeInstanceOf(LocallyRefusedResponse)
    expect(second.status).toBe(429)
    expect((second as LocallyRefusedResponse).refusedLocally).toBe(true)
    expect(second.headers.get('content-type')).toBe('application/problem+json; charset=utf-8')
    expect(await second.json()).toMatchObject({ status: 429, refusedLocally: true })
    // Refused locally or not, each call is counted as a request.
    expect(throttle.counts()).toMatchObject({ requests: 2, accepts: 0 })
  })

  it('retries a local refusal like a server 429, and onRetry says it was local', async () => {
    status = 429
    const throttle = createAdaptiveThrottle({ clock: () => now, random: () => 0 })
    const api = withRetry(fetch, opts({ maxAttempts: 3, adaptiveThrottle: throttle }))
    const res = await api(base)
    expect(res).toBeInstanceOf(LocallyRefusedResponse)
    expect(received).toBe(1)
    expect(retries.map((r) => r.refusedLocally)).toEqual([false, true])
    expect(retries[1]!.response).toBeInstanceOf(LocallyRefusedResponse)
    expect(throttle.counts().requests).toBe(3)
  })

  it('lets requests through again as the server accepts and the window forgets', async () => {
    status = 429
    const api = withRetry(
      fetch,
      opts({ maxAttempts: 1, adaptiveThrottle: { windowMs: 60_000 }, random: () => 0.99 }),
    )
    for (let i = 0; i < 200; i++) await api(base)
    const sentWhileRefused = received
    // p climbs towards 200/201: with random 0.99 most of the 200 calls are refused locally.
    expect(sentWhileRefused).toBeLessThan(120)
    status = 200
    now += 60_000
    received = 0
    for (let i = 0; i < 50; i++) expect((await api(base)).status).toBe(200)
    expect(received).toBe(50)
  })

  it('counts only answers other than 429 and 503 as accepts', async () => {
    const throttle = createAdaptiveThrottle({ clock: () => now })
    const api = withRetry(fetch, opts({ maxAttempts: 1, adaptiveThrottle: throttle }))
    for (const s of [200, 404, 500, 429, 503]) {
      status = s
      await api(base)
    }
    expect(throttle.counts()).toMatchObject({ requests: 5, accepts: 3 })
  })

  it('throttles requests that are never retried (POST) too', async () => {
    status = 503
    const throttle = createAdaptiveThrottle({ clock: () => now, random: () => 0 })
    const api = withRetry(fetch, opts({ adaptiveThrottle: throttle }))
    await api(base, { method: 'POST', body: 'x' })
    const res = await api(base, { method: 'POST', body: 'x' })
    expect(res).toBeInstanceOf(LocallyRefusedResponse)
    expect(received).toBe(1)
  })

  it('counts a network error as a request the server did not accept', async () => {
    const throttle = createAdaptiveThrottle({ clock: () => now })
    const failing = (): Promise<Response> => Promise.reject(new TypeError('fetch failed'))
    const api = withRetry(failing, opts({ maxAttempts: 1, adaptiveThrottle: throttle }))
    await expect(api(base)).rejects.toThrow('fetch failed')
    expect(throttle.counts()).toMatchObject({ requests: 1, accepts: 0 })
  })

  it('rejects an aborted call with its reason without counting it', async () => {
    const throttle = createAdaptiveThrottle({ clock: () => now })
    const api = withRetry(fetch, opts({ adaptiveThrottle: throttle }))
    await expect(api(base, { signal: AbortSignal.abort() })).rejects.toMatchObject({
      name: 'AbortError',
    })
    expect(throttle.counts().requests).toBe(0)
  })

  it.each([
    ['yes', TypeError, 'adaptiveThrottle: expected a boolean, an object or a throttle, got string'],
    [{ k: 0 }, RangeError, 'adaptiveThrottle.k: expected a finite number >= 1, got 0'],
    [{ windowMs: -1 }, RangeError, 'adaptiveThrottle.windowMs: expected a finite number > 0'],
    [{ window: 5 }, TypeError, 'adaptiveThrottle.window: expected one of k, windowMs'],
  ])('refuses adaptiveThrottle: %o when the wrapper is created', (value, type, message) => {
    const make = (): unknown => withRetry(fetch, { adaptiveThrottle: value as never })
    expect(make).toThrow(type)
    expect(make).toThrow(message)
  })
})
