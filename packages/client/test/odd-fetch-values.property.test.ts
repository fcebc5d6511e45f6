import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { withRetry } from '@floodgate/client'

// A fetch may throw any value and a fetch-shaped function may resolve to any value. The
// contract: a thrown value that is not a transient network failure is rethrown as is, after one
// call; an answer that is not a response (no integer status and headers) is a TypeError saying
// so, after one call. Neither is ever sent again, and reading the value never replaces it.

/** Values whose reading throws: a revoked Proxy, throwing getters where the client looks. */
function unreadable(kind: number): unknown {
  const boom = (what: string) => () => {
    throw new Error(`read ${what}`)
  }
  switch (kind) {
    case 0: {
      const { proxy, revoke } = Proxy.revocable({}, {})
      revoke()
      return proxy
    }
    case 1:
      return Object.create(Error.prototype, { name: { get: boom('name') } }) as unknown
    case 2:
      return Object.defineProperty({}, 'code', { get: boom('code'), enumerable: true })
    case 3: {
      const e = new TypeError('fetch failed')
      return Object.defineProperty(e, 'cause', { get: boom('cause') })
    }
    case 4:
      return Object.defineProperty({}, 'errors', { get: boom('errors'), enumerable: true })
    default:
      return new Proxy(
        {},
        { get: boom('a property'), has: boom('a key'), getPrototypeOf: boom('the prototype') },
      )
  }
}

// The unreadable values are built inside the property from their kind: fast-check reads the
// values it generates (to clone them), which would throw.
const thrown = fc.oneof(
  fc.record({
    value: fc.anything({ withNullPrototype: true, withMap: true, withSet: true, withBigInt: true }),
  }),
  fc.record({ unreadable: fc.integer({ min: 0, max: 5 }) }),
)

const options = fc.record({
  method: fc.constantFrom('GET', 'PUT', 'POST'),
  retryNonIdempotent: fc.boolean(),
  maxAttempts: fc.integer({ min: 1, max: 6 }),
})

describe('withRetry with a fetch that throws or answers odd values', () => {
  it('rethrows any thrown value that is not a network failure as is, after one call (property)', async () => {
    // Known cases that failed before: a revoked Proxy (TypeError "Cannot perform 'has' on a
    // proxy that has been revoked" replaced it), a `name` getter that throws.
    await fc.assert(
      fc.asyncProperty(thrown, options, async (t, o) => {
        const value = 'unreadable' in t ? unreadable(t.unreadable) : t.value
        let calls = 0
        const api = withRetry(
          // eslint-disable-next-line @typescript-eslint/require-await -- a fetch that throws
          async () => {
            calls++
            throw value
          },
          {
            maxAttempts: o.maxAttempts,
            retryNonIdempotent: o.retryNonIdempotent,
            sleep: async () => {},
          },
        )
        // Compared by identity: a revoked Proxy cannot even be compared by its contents.
        const outcome = await api('http://127.0.0.1:9/', { method: o.method }).then(
          () => 'resolved',
          (error: unknown) => (Object.is(error, value) ? 'rejected with the value' : 'replaced'),
        )
        expect(outcome).toBe('rejected with the value')
        expect(calls).toBe(1)
      }),
      { numRuns: 300 },
    )
  })

  it('refuses an answer that is not a response with a TypeError, after one call (property)', async () => {
    // Failed before: undefined, null or {} were taken for network failures, so a GET was sent
    // maxAttempts times and the call rejected with undefined.
    const answer = fc
      .anything({ withNullPrototype: true })
      .filter(
        (v) =>
          typeof v !== 'object' ||
          v === null ||
          !Number.isInteger((v as { status?: unknown }).status),
      )
    await fc.assert(
      fc.asyncProperty(answer, options, async (value, o) => {
        let calls = 0
        const api = withRetry(
          () => {
            calls++
            return Promise.resolve(value as Response)
          },
          {
            maxAttempts: o.maxAttempts,
            retryNonIdempotent: o.retryNonIdempotent,
            sleep: async () => {},
          },
        )
        const error = await api('http://127.0.0.1:9/', { method: o.method }).then(
          () => undefined,
          (e: unknown) => e,
        )
        expect(error).toBeInstanceOf(TypeError)
        expect((error as Error).message).toMatch(/^fetch resolved to .+, expected a Response$/)
        expect(calls).toBe(1)
      }),
      { numRuns: 300 },
    )
  })

  it.each([
    [undefined, 'fetch resolved to undefined, expected a Response'],
    [null, 'fetch resolved to null, expected a Response'],
    [
      { status: 200 },
      'fetch resolved to an object without a status and headers, expected a Response',
    ],
    ['ok', 'fetch resolved to a string, expected a Response'],
  ])('names what came back instead of a response: %j', async (value, message) => {
    const api = withRetry(() => Promise.resolve(value as unknown as Response))
    await expect(api('http://127.0.0.1:9/')).rejects.toThrow(new TypeError(message))
  })

  it('takes a response of another fetch implementation (not this realm’s Response class)', async () => {
    const foreign = { status: 200, headers: new Headers(), body: null }
    const api = withRetry(() => Promise.resolve(foreign as unknown as Response))
    await expect(api('http://127.0.0.1:9/')).resolves.toBe(foreign)
  })
})
