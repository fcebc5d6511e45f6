import fc from 'fast-check'
import { afterEach, describe, expect, it, vi } from 'vitest'
import type { Decision } from './decision.js'
import { createLimiter, type Limiter } from './limiter.js'
import type { RequestOutcome } from './limiter-types.js'
import type { RequestFacts } from './request-facts.js'
import type { CompiledRule } from './rules/compiled-rules.js'
import type { RuleInput } from './rules/schema.js'
import { MemoryStore } from './stores/memory-store.js'
import type { Store } from './stores/store.js'
import { collectUnhandledRejections } from './testing/unhandled-rejections.js'

// A model of what requests hold, against a limiter with a concurrency rule and a queueing rule
// on a MemoryStore (answering at once, or later in an order fast-check's scheduler picks):
// every concurrency slot the store records is given back exactly once, to the state it was
// taken in, and every queue place is left exactly once, whatever happens meanwhile: requests
// released (twice, with any outcome), waited for with several signals, aborted (one signal or
// another) while waiting, before their decision came back or once served,
// waits that end at the tick of an abort, rule sets swapped in and out (the slot rule removed,
// changed, made shadow; a bad set refused) while answers are on their way, answers that come
// after the deadline, the clock stepped hours back or forward, and close().

const CLIENTS = ['192.0.2.1', '192.0.2.2'] as const
const facts = (client: number, cost: number): RequestFacts => ({
  method: 'GET',
  path: '/',
  ip: CLIENTS[client]!,
  headers: {},
  cost,
})

const slots = (limit: number, shadow = false): RuleInput => ({
  id: 'c',
  algorithm: 'concurrency',
  limit,
  shadow,
})
const MAX_QUEUE = 2
const queue: RuleInput = {
  id: 'q',
  limit: 2,
  window: '1s',
  onLimit: { action: 'queue', maxWait: '3s', maxQueue: MAX_QUEUE },
}
/** The rule sets swapped in: slots and queue, each alone, a changed slot limit, shadow slots. */
const SETS: readonly (readonly RuleInput[])[] = [
  [slots(2), queue],
  [slots(2)],
  [queue],
  [slots(3), queue],
  [slots(2, true), queue],
]
const BAD_SET: readonly RuleInput[] = [slots(2), queue, { id: 'bad', limit: -1, window: '1s' }]
const stateIdOf = (r: RuleInput): string | undefined =>
  r.algorithm === 'concurrency' ? `c|concurrency|${r.limit}|0|${r.limit}` : undefined

const DECISION_TIMEOUT_MS = 200

type Op =
  | { readonly op: 'check'; readonly client: number; readonly cost: number }
  | { readonly op: 'deliver' }
  | { readonly op: 'wait'; readonly pick: number }
  | { readonly op: 'abort'; readonly pick: number; readonly which: number }
  | {
      readonly op: 'release'
      readonly pick: number
      readonly outcome: RequestOutcome | undefined
    }
  | { readonly op: 'advance'; readonly ms: number }
  | { readonly op: 'clockStep'; readonly ms: number }
  | { readonly op: 'swap'; readonly set: number }
  | { readonly op: 'bad' }
  | { readonly op: 'close' }

const HOUR = 3_600_000
const opArb: fc.Arbitrary<Op> = fc.oneof(
  {
    weight: 6,
    arbitrary: fc.record({
      op: fc.constant('check' as const),
      client: fc.nat(CLIENTS.length - 1),
      cost: fc.integer({ min: 1, max: 2 }),
    }),
  },
  { weight: 4, arbitrary: fc.constant({ op: 'deliver' as const }) },
  { weight: 3, arbitrary: fc.record({ op: fc.constant('wait' as const), pick: fc.nat() }) },
  {
    weight: 2,
    arbitrary: fc.record({ op: fc.constant('abort' as const), pick: fc.nat(), which: fc.nat() }),
  },
  {
    weight: 4,
    arbitrary: fc.record({
      op: fc.constant('release' as const),
      pick: fc.nat(),
      outcome: fc.constantFrom<RequestOutcome | undefined>(
        undefined,
        'succeeded',
        'failed',
        'abandoned',
      ),
    }),
  },
  {
    weight: 3,
    arbitrary: fc.record({
      op: fc.constant('advance' as const),
      ms: fc.oneof(fc.integer({ min: 0, max: 1500 }), fc.constantFrom(250, 500, 1000, 4000)),
    }),
  },
  {
    weight: 1,
    arbitrary: fc.record({
      op: fc.constant('clockStep' as const),
      ms: fc.constantFrom(-3 * HOUR, -HOUR, -1, HOUR, 5 * HOUR),
    }),
  },
  {
    weight: 2,
    arbitrary: fc.record({ op: fc.constant('swap' as const), set: fc.nat(SETS.length - 1) }),
  },
  { weight: 1, arbitrary: fc.constant({ op: 'bad' as const }) },
  { weight: 1, arbitrary: fc.constant({ op: 'close' as const }) },
)

/** One request, as the model sees it. */
interface Req {
  readonly client: number
  readonly cost: number
  /** Its client's signal (made with it, so it may abort before the decision), then one per later waitInQueue. */
  readonly signals: AbortController[]
  /** The life of the slot rule's state the store was asked in; undefined: no slot rule. */
  readonly life: string | undefined
  decision: Decision | undefined
  /** Holds a slot of the slot rule (in `life`). */
  holdsSlot: boolean
  /** The (fake) time its queue place is left; undefined: it holds none. */
  placeUntil: number | undefined
  /** The (fake) time its wait in waitInQueue ends; undefined: not waiting. */
  waitUntil: number | undefined
  /** Each waitInQueue call: what it should resolve to, and what it did. */
  readonly waits: { expected: boolean | undefined; got: boolean | undefined }[]
  /** The calls joined to the wait under way, and the signals armed on it. */
  joined: number[]
  armed: Set<AbortController>
  /** Its wait ran out: it is being served. */
  served: boolean
  /** Its lease ended: nothing it holds is given back again. */
  ended: boolean
}

/** The queue places a limiter holds now, per stored client key (a white-box read). */
function placesHeld(limiter: Limiter): Map<string, number> {
  const holdings = (limiter as unknown as { holdings: { queued: Map<string, number> } }).holdings
  const out = new Map<string, number>()
  for (const [k, n] of holdings.queued) {
    const client = k.slice(k.indexOf('\u0000') + 1)
    out.set(client, (out.get(client) ?? 0) + n)
  }
  return out
}

afterEach(() => {
  vi.useRealTimers()
})

describe('what requests hold, against a model, over interleavings of requests, answers, waits, aborts, releases, swaps, clock steps and close()', () => {
  const unhandled = collectUnhandledRejections()

  it('every slot is given back once to the state it was taken in, every queue place left once (property)', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.boolean(),
        fc.scheduler(),
        fc.array(opArb, { minLength: 1, maxLength: 60, size: 'max' }),
        async (asynchronous, s, ops) => {
          vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'setInterval'] })
          let fakeNow = 0
          let clock = 10 * HOUR
          const memory = new MemoryStore()
          // The slot rule's compiled rule and stored key per (state id, client), as asked.
          const asked = new Map<string, { rule: CompiledRule; key: string }>()
          // Slots recorded less slots given back, per (state id, stored key) in force: unlike the
          // store's count, which stops at 0, a slot given back twice or to the wrong state shows.
          const ledger = new Map<string, number>()
          const store: Store = {
            ...(asynchronous ? {} : { synchronous: true }),
            consume: (entries, nowMs) => {
              for (const e of entries) {
                if (e.rule.rule.id === 'c') {
                  asked.set(`${e.rule.stateId}\u0000${e.key}`, { rule: e.rule, key: e.key })
                }
              }
              const results = memory.consume(entries, nowMs)
              // All or nothing: every enforced entry admitted, so each admitted one is recorded.
              const gate = entries.every((e, i) => e.shadow || results[i]!.allowed)
              entries.forEach((e, i) => {
                if (gate && e.rule.rule.id === 'c' && results[i]!.allowed) {
                  const k = `${e.rule.stateId}\u0000${e.key}`
                  ledger.set(k, (ledger.get(k) ?? 0) + e.cost)
                }
              })
              if (!asynchronous) return results
              const copies = results.map((r) => ({ ...r }))
              return s.schedule(Promise.resolve(copies), 'store answer')
            },
            refund: (entries, nowMs) => {
              for (const e of entries) {
                const k = `${e.rule.stateId}\u0000${e.key}`
                if (e.rule.rule.id === 'c') ledger.set(k, (ledger.get(k) ?? 0) - e.cost)
              }
              memory.refund(entries, nowMs)
            },
            peek: (entries, nowMs) => memory.peek(entries, nowMs),
            retain: (ids) => {
              // The states that leave are dropped, with what was recorded in them.
              for (const k of ledger.keys()) {
                if (!ids.has(k.slice(0, k.indexOf('\u0000')))) ledger.delete(k)
              }
              memory.retain(ids)
            },
            close: () => memory.close(),
          }
          const limiter = createLimiter({
            rules: [...SETS[0]!],
            store,
            clock: () => clock,
            decisionTimeoutMs: DECISION_TIMEOUT_MS,
            logger: { debug() {}, info() {}, warn() {}, error() {} },
          })
          // The model.
          let set = 0
          const lives = new Map<string, number>()
          const lifeOf = (id: string): string => `${id}#${lives.get(id) ?? 0}`
          const slotStateIds = (i: number): string[] =>
            SETS[i]!.map(stateIdOf).filter((x): x is string => x !== undefined)
          const slotRule = (i: number): RuleInput | undefined => SETS[i]!.find((r) => r.id === 'c')
          let closed = false
          const reqs: Req[] = []
          let pending = 0
          const pick = (i: number): Req | undefined =>
            reqs.length === 0 ? undefined : reqs[i % reqs.length]

          const endPlace = (r: Req): void => {
            r.placeUntil = undefined
          }
          const endWait = (r: Req, admitted: boolean): void => {
            if (r.waitUntil === undefined) return
            r.waitUntil = undefined
            for (const i of r.joined) r.waits[i]!.expected = admitted
            r.joined = []
            r.armed.clear()
            if (admitted) r.served = true
          }
          /** The lease ends without being served: everything held goes back. */
          const abandon = (r: Req): void => {
            if (!r.ended) {
              r.ended = true
              r.holdsSlot = false
              endPlace(r)
            }
            endWait(r, false)
          }
          const heldInLife = (life: string, client: number): number =>
            reqs
              .filter((r) => r.holdsSlot && r.life === life && r.client === client)
              .reduce((sum, r) => sum + r.cost, 0)

          const decided = (r: Req, d: Decision): void => {
            r.decision = d
            if (d.failedOpen || !d.allowed) {
              r.ended = true
              return
            }
            const c = d.outcomes.find((o) => o.rule.id === 'c')
            r.holdsSlot = c !== undefined && c.allowed
            const q = d.outcomes.find((o) => o.rule.id === 'q')
            if (d.action === 'queue' && q !== undefined && q.waitMs > 0) {
              r.placeUntil = fakeNow + d.waitMs + 1000
            }
            if (!r.holdsSlot && r.placeUntil === undefined && d.action !== 'queue') r.ended = true
          }

          const check = (): void => {
            // Per slot state in force and client: the store's slots are the model's.
            if (!closed) {
              for (const id of slotStateIds(set)) {
                for (let client = 0; client < CLIENTS.length; client++) {
                  const a = [...asked.entries()].find(
                    ([k]) => k.startsWith(`${id}\u0000`) && k.endsWith(CLIENTS[client]!),
                  )?.[1]
                  const want = heldInLife(lifeOf(id), client)
                  expect(
                    ledger.get(`${id}\u0000${CLIENTS[client]!}`) ?? 0,
                    `slots recorded less given back for ${CLIENTS[client]} in ${lifeOf(id)}`,
                  ).toBe(want)
                  if (a === undefined) {
                    expect(want, `slots of ${CLIENTS[client]} in ${lifeOf(id)}`).toBe(0)
                    continue
                  }
                  const [got] = memory.peek([a], clock)
                  expect(
                    got!.limit - got!.remaining,
                    `slots of ${CLIENTS[client]} in ${lifeOf(id)}`,
                  ).toBe(want)
                }
              }
            }
            // The limiter's own count of requests holding a slot.
            const holding = reqs.filter((r) => r.holdsSlot).length
            expect(limiter.counters().inFlight.get('c') ?? 0, 'counters().inFlight').toBe(holding)
            // Queue places per client.
            const places = placesHeld(limiter)
            for (let client = 0; client < CLIENTS.length; client++) {
              const want = reqs.filter((r) => r.client === client && r.placeUntil !== undefined)
              expect(places.get(CLIENTS[client]!) ?? 0, `queue places of ${CLIENTS[client]}`).toBe(
                want.length,
              )
              expect(want.length).toBeLessThanOrEqual(MAX_QUEUE)
            }
            for (const r of reqs) {
              for (const w of r.waits)
                if (w.got !== undefined) expect(w.got, 'a wait').toBe(w.expected)
            }
          }

          /** Let every answer delivered, and what it settles, run. */
          const settle = async (): Promise<void> => {
            for (let i = 0; i < 3; i++) await new Promise((resolve) => setImmediate(resolve))
          }

          const advance = async (ms: number): Promise<void> => {
            fakeNow += ms
            clock += ms
            vi.advanceTimersByTime(ms)
            for (const r of reqs) {
              if (r.waitUntil !== undefined && r.waitUntil <= fakeNow) {
                endWait(r, true)
                endPlace(r)
              }
              if (r.placeUntil !== undefined && r.placeUntil <= fakeNow) endPlace(r)
            }
            await settle()
          }

          const run = async (o: Op): Promise<void> => {
            switch (o.op) {
              case 'check': {
                const rule = closed ? undefined : slotRule(set)
                const r: Req = {
                  client: o.client,
                  cost: o.cost,
                  signals: [new AbortController()],
                  life: rule === undefined ? undefined : lifeOf(stateIdOf(rule)!),
                  decision: undefined,
                  holdsSlot: false,
                  placeUntil: undefined,
                  waitUntil: undefined,
                  waits: [],
                  joined: [],
                  armed: new Set(),
                  served: false,
                  ended: false,
                }
                reqs.push(r)
                const d = limiter.check(facts(o.client, o.cost))
                if (d instanceof Promise) {
                  pending++
                  void d.then((x) => {
                    pending--
                    decided(r, x)
                  })
                } else {
                  if (closed) expect(d.failedOpen).toBe(true)
                  decided(r, d)
                }
                break
              }
              case 'deliver':
                if (s.count() > 0) await s.waitOne()
                await settle()
                break
              case 'wait': {
                const r = pick(o.pick)
                const d = r?.decision
                if (r === undefined || d === undefined) break
                // The first call with the client's signal, each later one with a signal of its own.
                if (r.waits.length > 0) r.signals.push(new AbortController())
                const leave = r.signals[r.signals.length - 1]!
                const call = r.waits.push({ expected: undefined, got: undefined }) - 1
                void limiter.waitInQueue(d, leave.signal).then((ok) => {
                  r.waits[call]!.got = ok
                })
                const w = r.waits[call]!
                if (d.action !== 'queue') {
                  w.expected = d.allowed
                } else if (r.ended || closed) {
                  w.expected = false
                  abandon(r)
                } else if (r.served) {
                  w.expected = true
                } else if (leave.signal.aborted) {
                  w.expected = false
                  abandon(r)
                } else if (r.waitUntil !== undefined) {
                  // Joins the wait under way; its signal can end it too.
                  r.joined.push(call)
                  r.armed.add(leave)
                } else {
                  r.waitUntil = fakeNow + d.waitMs
                  r.joined = [call]
                  r.armed = new Set([leave])
                  // The wait's own timer leaves the place from now (if it is still held).
                  if (r.placeUntil !== undefined) r.placeUntil = r.waitUntil
                }
                await settle()
                break
              }
              case 'abort': {
                const r = pick(o.pick)
                const leave = r?.signals[o.which % r.signals.length]
                if (r === undefined || leave === undefined || leave.signal.aborted) break
                leave.abort()
                if (r.armed.has(leave)) abandon(r)
                await settle()
                break
              }
              case 'release': {
                const r = pick(o.pick)
                const d = r?.decision
                if (r === undefined || d === undefined) break
                limiter.release(d, o.outcome)
                if (!r.ended) {
                  if (
                    r.waitUntil !== undefined ||
                    (o.outcome === 'abandoned' && d.action === 'queue')
                  ) {
                    abandon(r)
                  } else {
                    r.ended = true
                    r.holdsSlot = false
                    endPlace(r)
                  }
                }
                await settle()
                break
              }
              case 'advance':
                await advance(o.ms)
                break
              case 'clockStep':
                clock += o.ms
                break
              case 'swap': {
                if (closed) break
                const before = slotStateIds(set)
                limiter.updateRules([...SETS[o.set]!])
                const after = new Set(slotStateIds(o.set))
                // A state that leaves is dropped: its next life starts afresh.
                for (const id of before) if (!after.has(id)) lives.set(id, (lives.get(id) ?? 0) + 1)
                set = o.set
                break
              }
              case 'bad': {
                const ids = limiter.rules.map((r) => r.id)
                expect(() => limiter.updateRules([...BAD_SET])).toThrow()
                expect(limiter.rules.map((r) => r.id)).toEqual(ids)
                break
              }
              case 'close':
                if (closed) break
                closed = true
                for (const r of reqs) if (r.waitUntil !== undefined) abandon(r)
                await limiter.close()
                await settle()
                break
            }
          }

          try {
            for (const o of ops) {
              await run(o)
              // Once every answer is in and decided, the model and the limiter must agree.
              if (pending === 0 && s.count() === 0) check()
            }
            // Every answer comes back, every request ends.
            while (s.count() > 0) {
              await s.waitOne()
              await settle()
            }
            await advance(DECISION_TIMEOUT_MS)
            if (pending === 0) check()
            for (const r of reqs) {
              if (r.decision !== undefined)
                await run({ op: 'release', pick: reqs.indexOf(r), outcome: undefined })
            }
            check()
            await advance(10_000)
            check()
            expect(reqs.filter((r) => r.holdsSlot || r.placeUntil !== undefined)).toEqual([])
            if (!closed) await run({ op: 'close' })
            vi.advanceTimersByTime(10_000)
            expect(vi.getTimerCount()).toBe(0)
            expect(unhandled).toEqual([])
          } finally {
            vi.useRealTimers()
          }
        },
      ),
      {
        numRuns: 400,
        examples: [
          // Waited for with two signals; the second aborts once the request is being served.
          [
            false,
            fc.schedulerFor([]),
            [
              { op: 'check', client: 0, cost: 2 },
              { op: 'release', pick: 0, outcome: undefined },
              { op: 'check', client: 0, cost: 1 },
              { op: 'wait', pick: 1 },
              { op: 'wait', pick: 1 },
              { op: 'advance', ms: 1000 },
              { op: 'abort', pick: 1, which: 1 },
            ],
          ],
        ],
      },
    )
  })
})
