import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import type { AlgorithmResult } from '../algorithms/algorithm.js'
import type { KeyBuilder } from '../keys/build-key.js'
import { createLimiter } from '../limiter.js'
import type { Logger } from '../logger.js'
import { MemoryStore } from '../stores/memory-store.js'
import type { ConsumeEntry, Store } from '../stores/store.js'
import type { AdapterHarness, ScenarioRequest, ScenarioResponse } from './scenario-types.js'
import { collectUnhandledRejections } from './unhandled-rejections.js'
import { UNREADABLE_ANSWERS, UNREADABLE_KINDS } from './unreadable-answers.js'

/** What a hostile store answers: the shapes a buggy or broken store has been seen to return. */
const ANSWERS = [
  'valid',
  'throw',
  'reject',
  'never',
  'undefined',
  'null',
  'empty',
  'extra',
  'wrong-types',
  'nan',
  'not-array',
  'thenable-garbage',
  ...UNREADABLE_KINDS,
] as const
type Answer = (typeof ANSWERS)[number]

/** What a hostile `custom:x` key builder returns. */
const KEYS = ['ok', 'throw', 'undefined', 'object', 'huge', 'async-ok', 'async-reject'] as const
type KeyKind = (typeof KEYS)[number]

function answer(
  kind: Answer,
  entries: readonly ConsumeEntry[],
  now: number,
  inner: Store,
): unknown {
  switch (kind) {
    case 'valid':
      return inner.consume(entries, now)
    case 'throw':
      throw new Error('store exploded')
    case 'reject':
      return Promise.reject(new Error('store rejected'))
    case 'never':
      return new Promise(() => {})
    case 'undefined':
      return undefined
    case 'null':
      return null
    case 'empty':
      return []
    case 'extra':
      return [...(inner.consume(entries, now) as AlgorithmResult[]), { allowed: true }]
    case 'wrong-types':
      return entries.map(() => ({ allowed: 'yes', remaining: '3', resetMs: {}, limit: null }))
    case 'nan':
      return entries.map(() => ({
        allowed: false,
        remaining: NaN,
        resetMs: Infinity,
        retryAfterMs: -5,
        limit: NaN,
      }))
    case 'not-array':
      return { 0: { allowed: true }, length: 1 }
    case 'thenable-garbage':
      return { then: (ok: (v: unknown) => void) => ok(42) }
    default:
      // One result per entry, each throwing when read: the length check passes, reading fails.
      return UNREADABLE_ANSWERS[kind](entries.length)
  }
}

/** A logger that throws on every line: the failure paths log, and must still answer. */
export const throwingLogger: Logger = {
  debug: () => {
    throw new Error('logger exploded')
  },
  info: () => {
    throw new Error('logger exploded')
  },
  warn: () => {
    throw new Error('logger exploded')
  },
  error: () => {
    throw new Error('logger exploded')
  },
}

function hostileStore(script: readonly Answer[], asyncAnswers: boolean): Store {
  const inner = new MemoryStore()
  let i = 0
  return {
    consume: (entries, now) => {
      const kind = script[i++ % script.length] ?? 'valid'
      const a = answer(kind, entries, now, inner)
      return (asyncAnswers ? Promise.resolve(a) : a) as readonly AlgorithmResult[]
    },
    refund: (entries, now) => inner.refund(entries, now),
  }
}

function hostileKey(kind: KeyKind): KeyBuilder<never> {
  return (() => {
    switch (kind) {
      case 'ok':
        return 'client'
      case 'throw':
        throw new Error('key builder exploded')
      case 'undefined':
        return undefined
      case 'object':
        return { toString: () => 'sneaky' }
      case 'huge':
        return 'k'.repeat(100_000)
      case 'async-ok':
        return Promise.resolve('client')
      case 'async-reject':
        return Promise.reject(new Error('async key builder rejected'))
    }
  }) as unknown as KeyBuilder<never>
}

const request = fc.record({
  path: fc.constantFrom('/', '/users/7', '/users/%6De', '/users//7', '/users/7?x=%zz', '/nope'),
  headers: fc.dictionary(
    fc.constantFrom('x-api-key', 'x-forwarded-for', 'constructor', '__proto__', 'x-tier'),
    fc.string({ maxLength: 40 }).map((s) => s.replace(/[^\x20-\x7e]/g, 'a')),
    { maxKeys: 3 },
  ),
})

/** How long one request may take at most: the limiter's deadline and its backstop, with room. */
const ANSWER_WITHIN_MS = 2_000

function within(p: Promise<ScenarioResponse>): Promise<ScenarioResponse | 'hung'> {
  let timer: ReturnType<typeof setTimeout> | undefined
  const hung = new Promise<'hung'>(
    (resolve) => (timer = setTimeout(() => resolve('hung'), ANSWER_WITHIN_MS)),
  )
  return Promise.race([p, hung]).finally(() => clearTimeout(timer))
}

/**
 * Fuzz one adapter with hostile stores (synchronous and asynchronous: throwing, rejecting,
 * never settling, answering garbage of every shape), hostile key builders, a logger that throws
 * and odd requests, through its real framework. Every request must be answered, never with a 5xx (the scenario
 * app's handlers never fail, so a 5xx can only come from the limiter), and no promise may be
 * left rejected unhandled.
 *
 * @param harness - builds and starts an app, as for {@link describeAdapterScenarios}
 * @param runs - fast-check runs (each starts one app and sends a few requests)
 */
export function describeHostileFuzz(harness: AdapterHarness, runs: number = 12): void {
  describe(`${harness.name}: hostile stores, key builders and requests`, () => {
    const unhandled = collectUnhandledRejections()

    it('answers every request, never with a 5xx, and leaves no unhandled rejection', async () => {
      await fc.assert(
        fc.asyncProperty(
          fc.array(fc.constantFrom(...ANSWERS), { minLength: 1, maxLength: 4 }),
          fc.boolean(),
          fc.constantFrom(...KEYS),
          fc.boolean(),
          fc.array(request, { minLength: 1, maxLength: 4 }),
          async (script, asyncAnswers, keyKind, loggerThrows, requests) => {
            const limiter = createLimiter<never>({
              rules: [
                { id: 'per-key', key: 'custom:x', limit: 3, window: '1m' },
                {
                  id: 'users',
                  match: '/users/:id',
                  key: 'header:x-api-key',
                  limit: 2,
                  window: '1s',
                },
              ],
              keys: { x: hostileKey(keyKind) },
              store: hostileStore(script, asyncAnswers),
              timeoutMs: 20,
              ...(loggerThrows ? { logger: throwingLogger } : {}),
            })
            const app = await harness.start({
              limiter,
              routes: [
                { method: 'GET', path: '/' },
                { method: 'GET', path: '/users/:id' },
              ],
              trustProxy: false,
              options: {},
              enter: () => Promise.resolve(),
              beforeLimiter: () => Promise.resolve(),
            })
            try {
              for (const r of requests) {
                const req: ScenarioRequest = { method: 'GET', path: r.path, headers: r.headers }
                const res = await within(app.send(req))
                expect(res, `${r.path} answered`).not.toBe('hung')
                const status = (res as ScenarioResponse).status
                expect(status, `${r.path}: ${(res as ScenarioResponse).text}`).toBeLessThan(500)
              }
            } finally {
              await app.close()
              await limiter.close()
            }
            // Rejections surface a macrotask later at the latest.
            await new Promise((resolve) => setImmediate(resolve))
            expect(unhandled, 'unhandled rejections').toEqual([])
          },
        ),
        { numRuns: runs },
      )
    }, 60_000)
  })
}
