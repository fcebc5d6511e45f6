import fc from 'fast-check'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import {
  refuseReservation,
  type AlgorithmName,
  type AlgorithmResult,
} from '../algorithms/algorithm.js'
import type { CompiledRule } from '../rules/compiled-rules.js'
import type { ConsumeEntry, Store } from '../stores/store.js'
import { createLimiter } from '../limiter.js'
import { ExactBucket, exactBases, exactParams, exactSteps, stepCost } from './exact-bucket-model.js'
import { referenceModels } from './reference-models.js'
import { testRule } from './test-rule.js'
import { vectors } from './vectors.js'

/** Options of {@link describeStoreConformance}. */
export interface StoreConformanceOptions {
  /** Property runs per algorithm. @default 60 */
  readonly numRuns?: number
  /** Algorithms the store does not implement (none, for a complete store). */
  readonly skipAlgorithms?: readonly AlgorithmName[]
}

let keySeq = 0
const freshKey = (): string => `k${++keySeq}:${process.pid}:${Date.now().toString(36)}`

async function consume(
  store: Store,
  entries: readonly ConsumeEntry[],
  nowMs: number,
): Promise<AlgorithmResult[]> {
  // Copy: synchronous stores reuse their result objects.
  return (await store.consume(entries, nowMs)).map((r) => ({ ...r }))
}

function entry(
  rule: CompiledRule,
  key: string,
  cost = 1,
  extra: Partial<ConsumeEntry> = {},
): ConsumeEntry {
  return { rule, key, cost, maxWaitMs: 0, shadow: rule.rule.shadow, ...extra }
}

/**
 * The store conformance suite: shared vectors, all-or-nothing semantics, shadow entries,
 * refunds, reservations, and fast-check properties against the brute-force reference models
 * of every algorithm. Every Store (memory, Redis, synced) runs the same suite, so their
 * arithmetic can never disagree silently.
 *
 * The store must honour the `nowMs` it is given (a Redis store in its injected-clock mode).
 *
 * @param name - suite name
 * @param makeStore - creates the store under test (called once)
 * @param options - property run count, algorithms to leave out
 * @example
 * describeStoreConformance('MemoryStore', () => new MemoryStore())
 */
export function describeStoreConformance(
  name: string,
  makeStore: () => Store | Promise<Store>,
  options: StoreConformanceOptions = {},
): void {
  const skip = new Set(options.skipAlgorithms ?? [])
  const numRuns = options.numRuns ?? 60

  describe(`${name}: store conformance`, () => {
    let store: Store
    beforeAll(async () => {
      store = await makeStore()
    })
    afterAll(async () => {
      await store.close?.()
    })

    for (const v of vectors) {
      if (skip.has(v.algorithm)) continue
      it(`vector: ${v.name}`, async () => {
        const rule = testRule(v.algorithm, v.params.limit, v.params.windowMs, {
          burst: v.params.burst,
        })
        const key = freshKey()
        for (const [i, step] of v.steps.entries()) {
          const [r] = await consume(
            store,
            [entry(rule, key, step.cost, { maxWaitMs: step.maxWaitMs ?? 0 })],
            step.atMs,
          )
          const got: Record<string, unknown> = {}
          for (const k of Object.keys(step.expect)) got[k] = r![k as keyof AlgorithmResult]
          expect(got, `step ${i} at ${step.atMs} ms`).toEqual(step.expect)
        }
      })
    }

    it('charges no rule when one of the rules refuses (all-or-nothing)', async () => {
      const wide = testRule('token-bucket', 10, 1000)
      const narrow = testRule('fixed-window', 1, 1000)
      const key = freshKey()
      const first = await consume(store, [entry(wide, key), entry(narrow, key)], 0)
      expect(first.map((r) => r.allowed)).toEqual([true, true])
      const second = await consume(store, [entry(wide, key), entry(narrow, key)], 1)
      expect(second[1]!.allowed).toBe(false)
      // The wide rule alone shows it was charged once, not twice.
      const [alone] = await consume(store, [entry(wide, key)], 2)
      expect(alone!.remaining).toBe(8)
    })

    it('shadow entries never gate, and are recorded only when they allow', async () => {
      const real = testRule('token-bucket', 5, 1000)
      const shadow = testRule('fixed-window', 1, 1000, { shadow: true })
      const key = freshKey()
      const a = await consume(store, [entry(real, key), entry(shadow, key)], 0)
      expect(a.map((r) => r.allowed)).toEqual([true, true])
      const b = await consume(store, [entry(real, key), entry(shadow, key)], 1)
      expect(b.map((r) => r.allowed)).toEqual([true, false])
      expect(b[0]!.remaining).toBe(3)
    })

    it('a refused shadow entry does not stop the real ones being charged', async () => {
      const real = testRule('fixed-window', 3, 1000)
      const shadow = testRule('fixed-window', 0 + 1, 1000, { shadow: true })
      const key = freshKey()
      await consume(store, [entry(shadow, key)], 0)
      const r = await consume(store, [entry(real, key), entry(shadow, key)], 1)
      expect(r[0]!.allowed).toBe(true)
      expect(r[1]!.allowed).toBe(false)
      const [after] = await consume(store, [entry(real, key)], 2)
      expect(after!.remaining).toBe(1)
    })

    it('keeps keys and rules apart', async () => {
      const rule = testRule('fixed-window', 1, 1000)
      const other = testRule('fixed-window', 1, 1000)
      const k1 = freshKey()
      const k2 = freshKey()
      expect((await consume(store, [entry(rule, k1)], 0))[0]!.allowed).toBe(true)
      expect((await consume(store, [entry(rule, k1)], 0))[0]!.allowed).toBe(false)
      expect((await consume(store, [entry(rule, k2)], 0))[0]!.allowed).toBe(true)
      expect((await consume(store, [entry(other, k1)], 0))[0]!.allowed).toBe(true)
    })

    if (!skip.has('concurrency')) {
      it('concurrency slots are taken and released', async () => {
        const rule = testRule('concurrency', 2, 1000)
        const key = freshKey()
        expect((await consume(store, [entry(rule, key)], 0))[0]!.allowed).toBe(true)
        expect((await consume(store, [entry(rule, key)], 0))[0]!.allowed).toBe(true)
        expect((await consume(store, [entry(rule, key)], 0))[0]!.allowed).toBe(false)
        await store.refund([{ rule, key, cost: 1 }], 1)
        expect((await consume(store, [entry(rule, key)], 2))[0]!.allowed).toBe(true)
      })
    }

    it('an entry whose queue is full is refused where it would wait and then records nothing (property)', async () => {
      const reserving = (['token-bucket', 'gcra', 'fixed-window', 'leaky-bucket'] as const).filter(
        (a) => !skip.has(a),
      )
      if (reserving.length === 0) return
      await fc.assert(
        fc.asyncProperty(
          fc.constantFrom(...reserving),
          fc.integer({ min: 1, max: 5 }),
          fc.integer({ min: 0, max: 6 }),
          fc.integer({ min: 0, max: 1500 }),
          fc.integer({ min: 1, max: 4 }),
          fc.integer({ min: 1, max: 3000 }),
          fc.boolean(),
          async (algorithm, limit, before, gapMs, cost, maxWaitMs, shadowBeside) => {
            const rule = testRule(algorithm, limit, 1000, {
              onLimit: { action: 'queue', maxWaitMs, maxQueue: 1 },
            })
            const beside = testRule('token-bucket', 1, 1000, { shadow: true })
            // Three clients with one history: reserving, queue full, untouched.
            const [a, b, c] = [freshKey(), freshKey(), freshKey()]
            for (const k of [a, b, c]) {
              if (before > 0) await consume(store, [entry(rule, k, before, { maxWaitMs })], 0)
            }
            const ask = (k: string, queueFull: boolean) => {
              const e = entry(rule, k, cost, { maxWaitMs, queueFull })
              return consume(store, shadowBeside ? [e, entry(beside, k)] : [e], gapMs)
            }
            const [reserved] = await ask(a, false)
            const [full] = await ask(b, true)
            const want = { ...reserved! }
            refuseReservation(want)
            delete want.lease
            expect({ ...full!, lease: undefined, storeFull: undefined }).toEqual({
              ...want,
              lease: undefined,
              storeFull: undefined,
            })
            // Refused: b is where c is. Admitted at once: b is where a is.
            const [next] = await consume(store, [entry(rule, b, 1)], gapMs)
            const [same] = await consume(store, [entry(rule, want.allowed ? a : c, 1)], gapMs)
            expect(next).toEqual(same)
          },
        ),
        { numRuns },
      )
    })

    it('a reservation admits with a wait, goes into debt, and is paid back', async () => {
      const rule = testRule('token-bucket', 10, 1000, {
        onLimit: { action: 'queue', maxWaitMs: 500, maxQueue: 10 },
      })
      const key = freshKey()
      await consume(store, [entry(rule, key, 10)], 0)
      const [queued] = await consume(store, [entry(rule, key, 2, { maxWaitMs: 500 })], 0)
      expect(queued).toMatchObject({ allowed: true, waitMs: 200 })
      // Debt of 2 tokens: 200 ms later the bucket is back at zero, not at two.
      const [after] = await consume(store, [entry(rule, key, 1)], 200)
      expect(after!.allowed).toBe(false)
      const [later] = await consume(store, [entry(rule, key, 1)], 300)
      expect(later!.allowed).toBe(true)
    })

    for (const algorithm of ['token-bucket', 'gcra'] as const) {
      if (skip.has(algorithm)) continue
      it(`${algorithm}: past a burst of 2^24, a request of exactly what is left passes`, async () => {
        const rule = testRule(algorithm, 863_407_019, 1, { burst: 54_510_976 })
        const whole = freshKey()
        expect((await consume(store, [entry(rule, whole, 54_510_976)], 1_000))[0]).toMatchObject({
          allowed: true,
          remaining: 0,
        })
        const key = freshKey()
        const [first] = await consume(store, [entry(rule, key, 70_337)], 1_000)
        expect(first).toMatchObject({ allowed: true, remaining: 54_510_976 - 70_337 })
        const [rest] = await consume(store, [entry(rule, key, 54_510_976 - 70_337)], 1_000)
        expect(rest).toMatchObject({ allowed: true, remaining: 0 })
      })
    }

    it('a refund gives reserved units back', async () => {
      const rule = testRule('token-bucket', 4, 1000)
      const key = freshKey()
      await consume(store, [entry(rule, key, 4)], 0)
      await store.refund([{ rule, key, cost: 3 }], 0)
      const [r] = await consume(store, [entry(rule, key, 3)], 0)
      expect(r!.allowed).toBe(true)
    })

    // The operations on one client outside a request (optional in the Store contract): a
    // store that lacks one skips its cases here, and the limiter refuses the call naming it.

    it('peek reads a state without changing it', async (ctx) => {
      if (!store.peek) return ctx.skip()
      const rule = testRule('token-bucket', 5, 1000)
      const key = freshKey()
      const [fresh] = await store.peek([{ rule, key }], 0)
      expect(fresh).toMatchObject({ allowed: true, limit: 5, remaining: 5, resetMs: 0 })
      await consume(store, [entry(rule, key, 2)], 0)
      for (let i = 0; i < 2; i++) {
        const [seen] = await store.peek([{ rule, key }], 0)
        expect(seen).toMatchObject({ remaining: 3, resetMs: 400 })
      }
      const [r] = await consume(store, [entry(rule, key, 3)], 0)
      expect(r).toMatchObject({ allowed: true, remaining: 0 })
    })

    it('reset forgets a state, and only that one', async (ctx) => {
      if (!store.reset) return ctx.skip()
      const rule = testRule('token-bucket', 1, 60_000)
      const key = freshKey()
      const other = freshKey()
      await consume(store, [entry(rule, key)], 0)
      await consume(store, [entry(rule, other)], 0)
      await store.reset([{ rule, key }], 1)
      expect((await consume(store, [entry(rule, key)], 2))[0]!.allowed).toBe(true)
      expect((await consume(store, [entry(rule, other)], 2))[0]!.allowed).toBe(false)
      // Resetting a state that does not exist is no error.
      await store.reset([{ rule, key: freshKey() }], 3)
    })

    for (const algorithm of ['token-bucket', 'gcra'] as const) {
      if (skip.has(algorithm)) continue
      it(`penalize charges ${algorithm} into debt, paid back at the refill rate`, async (ctx) => {
        if (!store.penalize) return ctx.skip()
        const rule = testRule(algorithm, 10, 1000)
        const key = freshKey()
        await store.penalize([{ rule, key, cost: 15 }], 0)
        const [refused] = await consume(store, [entry(rule, key)], 0)
        expect(refused).toMatchObject({ allowed: false, remaining: 0, retryAfterMs: 600 })
        const [later] = await consume(store, [entry(rule, key)], 600)
        expect(later!.allowed).toBe(true)
      })
    }

    it('penalize refuses an algorithm that cannot carry debt, naming it', async (ctx) => {
      if (!store.penalize) return ctx.skip()
      const rule = testRule('concurrency', 1, 0)
      await expect(
        (async () => store.penalize!([{ rule, key: freshKey(), cost: 1 }], 0))(),
      ).rejects.toThrow(/concurrency/)
    })

    it('penalize is all or nothing: one entry that cannot carry debt charges none', async (ctx) => {
      if (!store.penalize || !store.peek) return ctx.skip()
      const chargeable = (['token-bucket', 'gcra'] as const).filter((a) => !skip.has(a))
      const unchargeable = referenceModels
        .map((m) => m.algorithm)
        .filter((a) => a !== 'token-bucket' && a !== 'gcra' && !skip.has(a))
      if (chargeable.length === 0 || unchargeable.length === 0) return ctx.skip()
      const charged = fc.record({
        algorithm: fc.constantFrom(...chargeable),
        key: fc.nat(2),
        cost: fc.integer({ min: 1, max: 30 }),
      })
      await fc.assert(
        fc.asyncProperty(
          fc.array(charged, { maxLength: 4 }),
          fc.constantFrom(...unchargeable),
          fc.nat(4),
          async (drawn, refused, at) => {
            const keys = [freshKey(), freshKey(), freshKey()]
            const rules = new Map(chargeable.map((a) => [a, testRule(a, 10, 1000)]))
            const entries = drawn.map((d) => ({
              rule: rules.get(d.algorithm)!,
              key: keys[d.key]!,
              cost: d.cost,
            }))
            entries.splice(Math.min(at, entries.length), 0, {
              rule: testRule(refused, 10, 1000),
              key: keys[0]!,
              cost: 1,
            })
            await expect(
              (async () => store.penalize!(entries, 0))(),
              'a penalty naming a rule that cannot carry debt',
            ).rejects.toThrow(new RegExp(refused))
            // Every state the penalty named reads as a client never seen.
            for (const e of entries) {
              if (!e.rule.algorithm.charge) continue
              const [after, fresh] = await store.peek!(
                [
                  { rule: e.rule, key: e.key },
                  { rule: e.rule, key: freshKey() },
                ],
                0,
              )
              expect({ ...after }, `${e.rule.algorithm.name} of ${e.key}`).toEqual({ ...fresh })
            }
          },
        ),
        { numRuns: Math.min(numRuns, 25) },
      )
    })

    it("a limiter's ban on this store is seen by a second limiter on it", async (ctx) => {
      if (!store.reset || !store.penalize) return ctx.skip()
      const key = freshKey()
      let now = 1_000_000
      const rules = [
        {
          id: `ban-${key.replace(/[^A-Za-z0-9]/g, '')}`.slice(0, 64),
          key: 'custom:client',
          limit: 1,
          window: '1m',
          ban: { after: 2, within: '1m', for: '10s' },
        },
      ]
      const options = { rules, store, keys: { client: () => key }, clock: () => now }
      const a = createLimiter(options)
      const b = createLimiter(options)
      const facts = { method: 'GET', path: '/', ip: undefined, headers: {} }
      expect((await a.check(facts)).allowed).toBe(true)
      expect((await a.check(facts)).banned).toBeUndefined()
      const started = await a.check(facts)
      expect(started).toMatchObject({ allowed: false, banned: true, retryAfterMs: 60_000 })
      now += 1000
      const seen = await b.check(facts)
      expect(seen).toMatchObject({ allowed: false, banned: true })
      expect(seen.retryAfterMs).toBe(59_000)
      now += 9000
      // The ban is over; the rule's own window still refuses, a third refusal: banned again.
      expect((await b.check(facts)).retryAfterMs).toBe(50_000)
      await b.reset(key)
      expect((await a.check(facts)).allowed).toBe(true)
    })

    it('a queue of one: of two concurrent requests of one client, the first passes and the second waits', async () => {
      const key = freshKey()
      const limiter = createLimiter({
        rules: [
          {
            id: `queue-${key.replace(/[^A-Za-z0-9]/g, '')}`.slice(0, 64),
            key: 'custom:client',
            limit: 1,
            window: '1s',
            onLimit: { action: 'queue', maxWait: '5s', maxQueue: 1 },
          },
        ],
        store,
        keys: { client: () => key },
        clock: () => 1_000_000,
      })
      const facts = { method: 'GET', path: '/', ip: undefined, headers: {} }
      // Sent together: an asynchronous store answers both after both are sent.
      const [first, second] = await Promise.all([limiter.check(facts), limiter.check(facts)])
      expect([first.action, second.action]).toEqual(['allow', 'queue'])
      expect(second.waitMs).toBe(1000)
      // The queue is full: a third is refused, and the reservation it made is given back.
      expect(await limiter.check(facts)).toMatchObject({ action: 'reject', retryAfterMs: 2000 })
      const gone = new AbortController()
      const waiting = limiter.waitInQueue(second, gone.signal)
      gone.abort()
      expect(await waiting).toBe(false)
      // Both reservations are back: the next request waits one window, not two or three.
      expect(await limiter.check(facts)).toMatchObject({ action: 'queue', waitMs: 1000 })
    })

    it("a limit function's answer on one limiter is reset by a second limiter on this store", async (ctx) => {
      if (!store.reset || !store.peek) return ctx.skip()
      const key = freshKey()
      const id = `fn-${key.replace(/[^A-Za-z0-9]/g, '')}`.slice(0, 64)
      let pro = true
      const options = {
        rules: [{ id, key: 'custom:client', limit: 1, window: '1m' }],
        store,
        keys: { client: () => key },
        clock: () => 1_000_000,
      }
      const a = createLimiter({ ...options, limits: { [id]: () => (pro ? 3 : undefined) } })
      const b = createLimiter({ ...options, limits: { [id]: () => undefined } })
      const facts = { method: 'GET', path: '/', ip: undefined, headers: {} }
      for (let i = 0; i < 3; i++) expect((await a.check(facts)).allowed).toBe(true)
      expect((await a.check(facts)).allowed).toBe(false)
      // b never answered 3: a store that records answers lets it find a's state; one that does
      // not shows b only the states its own answers name.
      if (!store.recordedLimits) {
        expect((await b.get(key)).map((v) => v.limit)).toEqual([1])
        return
      }
      await expect.poll(async () => (await b.get(key)).map((v) => v.limit)).toEqual([1, 3])
      await b.reset(key)
      expect(await a.check(facts)).toMatchObject({ allowed: true, remaining: 2 })
      pro = false
      expect(await a.check(facts)).toMatchObject({ allowed: true, remaining: 0 })
    })

    for (const model of referenceModels) {
      if (skip.has(model.algorithm)) continue
      it(`matches the reference model: ${model.algorithm}`, async () => {
        await fc.assert(
          fc.asyncProperty(
            fc.integer({ min: 1, max: 8 }),
            fc.integer({ min: 100, max: 2000 }),
            fc.array(fc.tuple(fc.integer({ min: 0, max: 400 }), fc.integer({ min: 1, max: 3 })), {
              minLength: 1,
              maxLength: 30,
            }),
            async (limit, windowMs, steps) => {
              const rule = testRule(model.algorithm, limit, windowMs)
              const ref = model.create(rule.params)
              const key = freshKey()
              let now = 1_000
              for (const [dt, cost] of steps) {
                now += dt
                const [got] = await consume(store, [entry(rule, key, cost)], now)
                const want = ref.consume(cost, now)
                expect({ allowed: got!.allowed, remaining: got!.remaining }).toEqual({
                  allowed: want.allowed,
                  remaining: want.remaining,
                })
                if (model.algorithm === 'concurrency' && got!.allowed && dt % 2 === 0) {
                  await store.refund([{ rule, key, cost }], now)
                  ref.refund(cost, now)
                }
              }
            },
          ),
          { numRuns },
        )
      })
    }

    for (const name of ['token-bucket', 'gcra', 'leaky-bucket'] as const) {
      if (skip.has(name)) continue
      it(`${name}: exact at every size within the documented range (BigInt model)`, async () => {
        await fc.assert(
          fc.asyncProperty(
            exactParams.chain(({ p, maxWaitMs }) =>
              fc.tuple(fc.constant(p), exactSteps(p, maxWaitMs), exactBases),
            ),
            async ([p, steps, base]) => {
              const rule = testRule(name, p.limit, p.windowMs, { burst: p.burst })
              const model = new ExactBucket(name, p)
              const key = freshKey()
              let now = base
              for (const step of steps) {
                now += step.dtMs
                const cost = stepCost(step, model, p, now)
                const [got] = await consume(
                  store,
                  [entry(rule, key, cost, { maxWaitMs: step.maxWaitMs })],
                  now,
                )
                const want = model.consume(cost, now, step.maxWaitMs)
                expect({ ...got, limit: undefined }, `cost ${cost} at ${now}`).toEqual({
                  ...want,
                  limit: undefined,
                })
              }
            },
          ),
          { numRuns },
        )
      })
    }
  })
}
