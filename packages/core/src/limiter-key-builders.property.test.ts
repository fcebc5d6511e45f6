import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import type { Decision } from './decision.js'
import { createLimiter, type LimiterOptions } from './limiter.js'
import type { Logger } from './logger.js'
import type { RequestFacts } from './request-facts.js'
import type { RuleInput } from './rules/schema.js'
import { collectUnhandledRejections } from './testing/unhandled-rejections.js'

// A key builder's answer often depends on what the client sent (`req.query.key` is an array
// for `?key=a&key=b`; decoding a garbage token throws). Such a failure must be no value for
// the key part (the rule's fallbackKey applies), never a request passed unjudged.

const INTERVAL_MS = 1_000
const IP = '203.0.113.7'

/** What the builder does on one request: fail (throw or answer a non-key) or answer a key. */
type Behaviour = { fails: true; run: () => unknown } | { fails: false; run: () => string }

const thrown = fc.anything().map((v): Behaviour => ({
  fails: true,
  run: () => {
    throw v
  },
}))
const thrownError = fc.string().map((m): Behaviour => ({
  fails: true,
  run: () => {
    throw new SyntaxError(m)
  },
}))

/** Answers that are not keys, made fresh per call (a promise must be new to reject unheard). */
const NON_KEYS: ReadonlyArray<() => unknown> = [
  () => ['a', 'b'],
  () => [],
  () => ({ toString: () => 'sneaky' }),
  () => Object.create(null) as object,
  () => Promise.resolve('client'),
  () => Promise.reject(new Error('async key builder rejected')),
  () => ({ then: (ok: (v: unknown) => void) => ok('client') }),
  () => () => 'client',
  () => Symbol('k'),
  () => 10n,
  () => true,
  () => false,
  () => new Date(0),
  () => {
    const { proxy, revoke } = Proxy.revocable({}, {})
    revoke()
    return proxy
  },
  () =>
    new Proxy(
      {},
      {
        get: () => {
          throw new Error('read me not')
        },
      },
    ),
]
const nonKey = fc.constantFrom(...NON_KEYS).map((make): Behaviour => ({ fails: true, run: make }))
const key = fc.constantFrom('a', 'b', '42').map((k): Behaviour => ({ fails: false, run: () => k }))
const behaviour: fc.Arbitrary<Behaviour> = fc.oneof(thrown, thrownError, nonKey, key)

function recordingLogger(): Logger & { lines: { obj: Record<string, unknown>; msg?: string }[] } {
  const lines: { obj: Record<string, unknown>; msg?: string }[] = []
  const warn = (obj: object, msg?: string): void => {
    lines.push({ obj: obj as Record<string, unknown>, msg })
  }
  return { debug: () => {}, info: () => {}, warn, error: () => {}, lines }
}

function sync(d: Decision | Promise<Decision>): Decision {
  if (d instanceof Promise) throw new Error('expected a synchronous decision')
  return d
}

const facts = (): RequestFacts => ({ method: 'GET', path: '/', ip: IP, headers: {}, request: {} })

describe('a key builder that throws or answers a non-key', () => {
  const unhandled = collectUnhandledRejections()

  it('property: is no value for its key part: the fallbackKey applies, nothing fails open, one log line per interval', async () => {
    fc.assert(
      fc.property(
        fc.array(fc.tuple(behaviour, fc.integer({ min: 0, max: 600 })), {
          minLength: 1,
          maxLength: 30,
        }),
        fc.integer({ min: 1, max: 4 }),
        fc.constantFrom('ip', 'shared', 'skip'),
        fc.constantFrom<RuleInput['key']>(['user'], ['custom:tenant'], ['custom:tenant', 'ip']),
        (requests, limit, fallbackKey, ruleKey) => {
          let now = 1_000
          let next: Behaviour = requests[0]![0]
          const builder = (): string => next.run() as string
          const log = recordingLogger()
          const options: LimiterOptions = {
            // A fixed window far longer than the run: nothing is given back while it lasts.
            rules: [
              {
                id: 'r',
                algorithm: 'fixed-window',
                limit,
                window: '1h',
                key: ruleKey,
                fallbackKey,
              },
            ],
            keys: { user: builder, tenant: builder },
            clock: () => now,
            failOpenLogIntervalMs: INTERVAL_MS,
            logger: log,
          }
          const limiter = createLimiter(options)
          const name = ruleKey![0] === 'user' ? 'keys.user' : 'keys.tenant'

          // Reference model: a bucket per key; a failed builder is the fallback client.
          const used = new Map<string, number>()
          let lastLineMs = -Infinity
          let lines = 0
          for (const [b, stepMs] of requests) {
            now += stepMs
            next = b
            const d = sync(limiter.check(facts()))
            expect(d.failedOpen).toBe(false)
            let bucket: string | undefined
            if (b.fails) {
              bucket = fallbackKey === 'skip' ? undefined : `fallback:${fallbackKey}`
              if (now - lastLineMs >= INTERVAL_MS) {
                lastLineMs = now
                lines++
              }
            } else {
              bucket = b.run()
            }
            if (bucket === undefined) {
              // The rule does not apply: nothing judged it.
              expect(d).toMatchObject({ allowed: true, outcomes: [] })
              continue
            }
            const n = used.get(bucket) ?? 0
            expect(d.allowed).toBe(n < limit)
            if (n < limit) used.set(bucket, n + 1)
          }

          const keyLines = log.lines.filter((l) => l.obj.code === 'FG_WRN_KEY_BUILDER_FAILED')
          expect(keyLines).toHaveLength(lines)
          for (const l of keyLines) {
            expect(l.obj.builder).toBe(name)
            expect(l.msg).toContain(`key builder ${name} `)
            expect(l.msg).toMatch(/ (threw|answered)/)
          }
          expect(log.lines.filter((l) => l.obj.code !== 'FG_WRN_KEY_BUILDER_FAILED')).toEqual([])
          expect(limiter.counters().total.failedOpen).toBe(0)
        },
      ),
      { numRuns: 300 },
    )
    // Let the rejections of rejected answers surface before asserting none went unhandled.
    await new Promise((r) => setTimeout(r, 10))
    expect(unhandled).toEqual([])
  })

  it('property: everywhere a builder is read (tiers.by, rule and limiter allow and deny lists), a failure is no value', async () => {
    const failing = fc.oneof(thrown, thrownError, nonKey)
    type Place = 'tiers' | 'rule-allow' | 'rule-deny' | 'allow' | 'deny'
    const place = fc.constantFrom<Place>('tiers', 'rule-allow', 'rule-deny', 'allow', 'deny')
    fc.assert(
      fc.property(failing, place, fc.integer({ min: 1, max: 3 }), (b, where, limit) => {
        const log = recordingLogger()
        const listed = { keys: { user: ['vip'] } }
        const rule: RuleInput = {
          id: 'per-ip',
          algorithm: 'fixed-window',
          limit,
          window: '1h',
          ...(where === 'tiers' ? { limit: undefined, tiers: tiersFor(limit) } : {}),
          ...(where === 'rule-allow' ? { allow: listed } : {}),
          ...(where === 'rule-deny' ? { deny: listed } : {}),
        }
        const limiter = createLimiter({
          rules: [rule],
          keys: { user: () => b.run() as string },
          ...(where === 'allow' ? { allow: listed } : {}),
          ...(where === 'deny' ? { deny: listed } : {}),
          clock: () => 1_000,
          logger: log,
        })
        // With no value the client is on no list and in the default tier: `limit` admitted.
        const admitted: boolean[] = []
        for (let i = 0; i < limit + 2; i++) {
          const d = sync(limiter.check(facts()))
          expect(d.failedOpen).toBe(false)
          admitted.push(d.allowed)
        }
        expect(admitted.filter(Boolean)).toHaveLength(limit)
        expect(log.lines.map((l) => l.obj.code)).toEqual(['FG_WRN_KEY_BUILDER_FAILED'])
      }),
      { numRuns: 200 },
    )
    await new Promise((r) => setTimeout(r, 10))
    expect(unhandled).toEqual([])
  })
})

/** Tiers by `user` whose default tier has `limit`; the `vip` tier would admit far more. */
function tiersFor(limit: number): RuleInput['tiers'] {
  return { by: 'user', values: { vip: { limit: 1_000 }, free: { limit } }, default: 'free' }
}
