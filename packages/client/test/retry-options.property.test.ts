import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { withRetry } from '../src/index.js'
import type { RetryOptions } from '../src/index.js'

const ok = (): Promise<Response> => Promise.resolve(new Response('ok'))

/** What each option accepts, as the docs' table says. */
type Kind = 'count' | 'ms' | 'boolean' | 'function' | 'statuses' | 'jitter' | 'signal'
const KINDS: Record<string, Kind> = {
  maxAttempts: 'count',
  baseMs: 'ms',
  capMs: 'ms',
  maxTotalMs: 'ms',
  retryOn: 'statuses',
  retryNonIdempotent: 'boolean',
  retryNetworkErrors: 'boolean',
  jitter: 'jitter',
  random: 'function',
  sleep: 'function',
  clock: 'function',
  onRetry: 'function',
  signal: 'signal',
}

/** The reference: what creating a wrapper with `{ [name]: value }` does. */
function expected(kind: Kind, value: unknown): 'ok' | 'TypeError' | 'RangeError' {
  if (value === undefined) return 'ok'
  switch (kind) {
    case 'count':
      if (typeof value !== 'number') return 'TypeError'
      return Number.isInteger(value) && value >= 1 ? 'ok' : 'RangeError'
    case 'ms':
      if (typeof value !== 'number') return 'TypeError'
      return value >= 0 ? 'ok' : 'RangeError'
    case 'boolean':
      return typeof value === 'boolean' ? 'ok' : 'TypeError'
    case 'function':
      return typeof value === 'function' ? 'ok' : 'TypeError'
    case 'signal':
      return value instanceof AbortSignal ? 'ok' : 'TypeError'
    case 'jitter':
      if (typeof value !== 'string') return 'TypeError'
      return value === 'full' || value === 'none' ? 'ok' : 'RangeError'
    case 'statuses':
      if (!Array.isArray(value) || value.some((s) => typeof s !== 'number')) return 'TypeError'
      return value.every((s: number) => Number.isInteger(s) && s >= 100 && s <= 599)
        ? 'ok'
        : 'RangeError'
  }
}

const values = fc.oneof(
  fc.anything(),
  fc.double(),
  fc.integer({ min: -5, max: 700 }),
  fc.array(fc.oneof(fc.integer({ min: 0, max: 1000 }), fc.double(), fc.string()), {
    maxLength: 3,
  }),
  fc.constantFrom<unknown>(
    null,
    'full',
    'none',
    '429',
    true,
    () => 0,
    new AbortController().signal,
    Number.POSITIVE_INFINITY,
  ),
)

describe('withRetry options', () => {
  it('a bad option throws when the wrapper is created, naming it: a TypeError for the wrong type, a RangeError out of range (property)', () => {
    fc.assert(
      fc.property(fc.constantFrom(...Object.keys(KINDS)), values, (name, value) => {
        const want = expected(KINDS[name]!, value)
        let got = 'ok'
        try {
          withRetry(ok, { [name]: value })
        } catch (error) {
          got = (error as Error).constructor.name
          expect((error as Error).message.startsWith(`${name}: expected `)).toBe(true)
        }
        expect({ name, value, got }).toEqual({ name, value, got: want })
      }),
      { numRuns: 2000 },
    )
  })

  // A misspelt name (`maxAttempt`) was ignored: the wrapper ran with the default, silently.
  it('an option name it does not know throws a TypeError naming it, the known names listed (property)', () => {
    const known = [...Object.keys(KINDS), 'adaptiveThrottle']
    fc.assert(
      fc.property(
        fc.oneof(
          fc.string({ minLength: 1, maxLength: 20 }),
          fc.constantFrom('maxAttempt', 'retry', 'timeout', 'retries', 'backoff', 'MaxAttempts'),
        ),
        fc.anything(),
        (name, value) => {
          fc.pre(!known.includes(name))
          expect(() => withRetry(ok, { [name]: value })).toThrow(
            new TypeError(
              `withRetry.${name}: expected one of ${known.join(', ')}, got an unknown option`,
            ),
          )
        },
      ),
      { numRuns: 500 },
    )
  })

  it('examples: the wrong type, out of range, and what is accepted', () => {
    const bad: [RetryOptions | null, ErrorConstructor, string][] = [
      [{ maxAttempts: '3' as never }, TypeError, 'maxAttempts: expected an integer >= 1, got "3"'],
      [{ baseMs: '100' as never }, TypeError, 'baseMs: expected a number >= 0, got "100"'],
      [
        { retryOn: [429, '503' as never] },
        TypeError,
        'retryOn: expected an array of HTTP statuses',
      ],
      [{ retryOn: [1429] }, RangeError, 'retryOn: expected an array of HTTP statuses'],
      [{ retryNetworkErrors: 'no' as never }, TypeError, 'retryNetworkErrors: expected a boolean'],
      [{ sleep: 5 as never }, TypeError, 'sleep: expected a function, got 5'],
      [{ onRetry: 'log' as never }, TypeError, 'onRetry: expected a function, got "log"'],
      [{ signal: {} as never }, TypeError, 'signal: expected an AbortSignal, got an object'],
      [null, TypeError, 'options: expected an object, got null'],
    ]
    for (const [options, type, message] of bad) {
      expect(() => withRetry(ok, options as RetryOptions)).toThrow(type)
      expect(() => withRetry(ok, options as RetryOptions)).toThrow(message)
    }
    expect(() =>
      withRetry(ok, { maxTotalMs: Number.POSITIVE_INFINITY, capMs: 0, retryOn: [] }),
    ).not.toThrow()
  })
})
