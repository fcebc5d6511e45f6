import { once } from 'node:events'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import fc from 'fast-check'
import { beforeAll, describe, expect, it } from 'vitest'
import { withRetry } from '@floodgate/client'
import type { FetchInput, RetryOptions } from '@floodgate/client'
import { refusedUrl } from './refused-url.js'

// No real waits: every retry's sleep returns at once.
const opts = (extra: RetryOptions = {}): RetryOptions => ({
  maxAttempts: 3,
  sleep: () => Promise.resolve(),
  random: () => 0,
  ...extra,
})

/** The real fetch, counting its calls. */
function countedFetch() {
  const counter = { calls: 0 }
  const api = withRetry((input: FetchInput, init?: RequestInit) => {
    counter.calls++
    return fetch(input, init)
  }, opts())
  return { api, counter }
}

/** What the call rejected with. */
async function rejection(p: Promise<unknown>): Promise<unknown> {
  try {
    await p
  } catch (err) {
    return err
  }
  throw new Error('expected a rejection')
}

describe('errors that would fail again are not retried (real fetch)', () => {
  let deadUrl: string
  beforeAll(async () => {
    deadUrl = await refusedUrl()
  })

  it.each([
    ['an invalid URL', 'not a url', undefined],
    ['a URL without a host', 'http://', undefined],
    ['an unsupported protocol', 'ftp://127.0.0.1/a', undefined],
    ['an invalid header name', 'DEAD', { headers: { 'x\n': 'a' } }],
    ['a GET with a body', 'DEAD', { body: 'x' }],
    ['credentials in the URL', 'http://u:p@127.0.0.1:1/', undefined],
  ] as const)('%s: one call, the original error', async (_name, url, init) => {
    const { api, counter } = countedFetch()
    const target = url === 'DEAD' ? deadUrl : url
    const err = await rejection(api(target, init))
    expect(err).toBeInstanceOf(TypeError)
    expect(counter.calls).toBe(1)
    // The same error fetch itself gives.
    const direct = await rejection(fetch(target, init))
    expect((err as Error).message).toBe((direct as Error).message)
  })

  it('a refused connection (ECONNREFUSED under "fetch failed") is still retried', async () => {
    const { api, counter } = countedFetch()
    const err = (await rejection(api(deadUrl))) as Error
    expect(err.message).toBe('fetch failed')
    expect((err.cause as { code?: string }).code).toBe('ECONNREFUSED')
    expect(counter.calls).toBe(3)
  })

  it('a connection the server resets is still retried', async () => {
    const server = createServer((req) => req.socket.destroy())
    server.listen(0, '127.0.0.1')
    await once(server, 'listening')
    try {
      const { api, counter } = countedFetch()
      const port = (server.address() as AddressInfo).port
      await rejection(api(`http://127.0.0.1:${port}/`))
      expect(counter.calls).toBe(3)
    } finally {
      server.close()
    }
  })

  it("an abort of the caller's signal fails at once with its reason, whatever the reason", async () => {
    const { api, counter } = countedFetch()
    const controller = new AbortController()
    const reason = new Error('user left')
    controller.abort(reason)
    expect(await rejection(api(deadUrl, { signal: controller.signal }))).toBe(reason)
    expect(counter.calls).toBe(0)
  })
})

/** Node's codes of failures of the connection, not of the request: the next attempt may pass. */
const TRANSIENT_CODES = [
  'ECONNRESET',
  'ECONNREFUSED',
  'ECONNABORTED',
  'EPIPE',
  'ETIMEDOUT',
  'ENETUNREACH',
  'ENETDOWN',
  'EHOSTUNREACH',
  'EAI_AGAIN',
  'ENOTFOUND',
  'UND_ERR_SOCKET',
  'UND_ERR_CONNECT_TIMEOUT',
  'UND_ERR_HEADERS_TIMEOUT',
  'UND_ERR_BODY_TIMEOUT',
] as const

/** An error kind and whether the reference says it may pass on another attempt. */
type Kind = { make: () => unknown; transient: boolean; label: string }

const coded = (code: string, message = code): Error => Object.assign(new Error(message), { code })

const kinds: fc.Arbitrary<Kind> = fc.oneof(
  // undici: TypeError('fetch failed') whose cause carries the system or undici code.
  fc.constantFrom(...TRANSIENT_CODES).map((code) => ({
    label: `fetch failed / ${code}`,
    transient: true,
    make: () => new TypeError('fetch failed', { cause: coded(code) }),
  })),
  // node:http and others: the code on the error itself ("socket hang up" is ECONNRESET).
  fc.constantFrom(...TRANSIENT_CODES).map((code) => ({
    label: `${code} itself`,
    transient: true,
    make: () => coded(code, code === 'ECONNRESET' ? 'socket hang up' : code),
  })),
  // No cause to read: undici's and the browsers' bare network-failure messages.
  fc
    .constantFrom(
      'fetch failed',
      'Failed to fetch',
      'NetworkError when attempting to fetch resource.',
      'Load failed',
    )
    .map((message) => ({ label: message, transient: true, make: () => new TypeError(message) })),
  // Deterministic: the request itself is wrong, or the user gave up.
  fc.constantFrom(
    {
      label: 'invalid URL',
      transient: false,
      make: () =>
        new TypeError('Failed to parse URL from x', {
          cause: Object.assign(new TypeError('Invalid URL'), { code: 'ERR_INVALID_URL' }),
        }),
    },
    {
      label: 'unknown scheme',
      transient: false,
      make: () => new TypeError('fetch failed', { cause: new Error('unknown scheme') }),
    },
    {
      label: 'header check',
      transient: false,
      make: () => new TypeError('Headers.append: "x\n" is an invalid header name.'),
    },
    {
      label: 'body used',
      transient: false,
      make: () => new TypeError('Body is unusable: Body has already been read'),
    },
    {
      label: 'AbortError',
      transient: false,
      make: () => new DOMException('This operation was aborted', 'AbortError'),
    },
    {
      label: 'TimeoutError',
      transient: false,
      make: () => new DOMException('The operation timed out', 'TimeoutError'),
    },
    {
      label: 'bad response',
      transient: false,
      make: () =>
        new TypeError('fetch failed', { cause: coded('HPE_INVALID_CONSTANT', 'Expected HTTP/') }),
    },
    { label: 'RangeError', transient: false, make: () => new RangeError('bad value') },
    { label: 'a string', transient: false, make: () => 'oops' },
    { label: 'null', transient: false, make: () => null },
  ),
  // Any other code, at either depth: not known to pass on another attempt.
  fc
    .string({ minLength: 1, maxLength: 12 })
    .filter((code) => !(TRANSIENT_CODES as readonly string[]).includes(code))
    .chain((code) =>
      fc.constantFrom(
        {
          label: `fetch failed / ${code}`,
          transient: false,
          make: () => new TypeError('fetch failed', { cause: coded(code) }),
        },
        { label: `${code} itself`, transient: false, make: () => coded(code) },
      ),
    ),
)

describe('which thrown errors are retried (property over error kinds)', () => {
  it('a transient network error is retried up to maxAttempts, any other fails at once with the original error', async () => {
    await fc.assert(
      fc.asyncProperty(kinds, fc.integer({ min: 1, max: 5 }), async (kind, maxAttempts) => {
        let calls = 0
        let thrown: unknown
        const api = withRetry(() => {
          calls++
          thrown = kind.make()
          // A broken fetch may reject with anything, not only an Error.
          // eslint-disable-next-line @typescript-eslint/prefer-promise-reject-errors
          return Promise.reject(thrown)
        }, opts({ maxAttempts }))
        const err = await rejection(api('http://127.0.0.1:1/'))
        expect(err, kind.label).toBe(thrown)
        expect(calls, kind.label).toBe(kind.transient ? maxAttempts : 1)
      }),
      { numRuns: 400 },
    )
  })
})
