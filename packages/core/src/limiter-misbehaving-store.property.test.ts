import fc from 'fast-check'
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest'
import type { Decision } from './decision.js'
import { createLimiter } from './limiter.js'
import type { RequestFacts } from './request-facts.js'
import { MemoryStore } from './stores/memory-store.js'
import type { RefundEntry, Store } from './stores/store.js'
import { collectUnhandledRejections } from './testing/unhandled-rejections.js'

const IP = '203.0.113.7'
const facts: RequestFacts = { method: 'GET', path: '/', ip: IP, headers: {} }

/** Deadlines of the limiter under test, and what each call may take at most because of them. */
const DECISION_MS = 50
const STATE_MS = 200
const CLOSE_MS = 500
/** A decision waits for the store, then for a ban's record: two deadlines. */
const CHECK_BOUND_MS = 2 * DECISION_MS
/** When a late answer arrives: past every deadline. */
const LATE_MS = 10_000

/** What the store does with one call. */
type Act =
  | { readonly kind: 'ok' | 'late' | 'never' | 'thenable-never' | 'then-throws'; async: boolean }
  // Typed as an Error: what a store rejects with is its own choice, and most of these are not.
  | { readonly kind: 'reject' | 'throw'; readonly value: Error }
  | { readonly kind: 'garbage'; readonly value: unknown; readonly async: boolean }

const thrownValue: fc.Arbitrary<Error> = fc
  .constantFrom<unknown>(
    new Error('store boom'),
    null,
    undefined,
    'text',
    42,
    new Proxy(
      {},
      {
        get: () => {
          throw new Error('read boom')
        },
      },
    ),
  )
  .map((v) => v as Error)

const garbageValue = fc.constantFrom<unknown>(
  undefined,
  null,
  0,
  'ok',
  {},
  [],
  [{}],
  [null],
  [{ allowed: true }],
  { length: 1 },
)

const act: fc.Arbitrary<Act> = fc.oneof(
  { weight: 4, arbitrary: fc.record({ kind: fc.constant('ok' as const), async: fc.boolean() }) },
  fc.record({
    kind: fc.constantFrom('late' as const, 'never' as const, 'thenable-never', 'then-throws'),
    async: fc.constant(true),
  }),
  fc.record({ kind: fc.constantFrom('reject' as const, 'throw' as const), value: thrownValue }),
  fc.record({ kind: fc.constant('garbage' as const), value: garbageValue, async: fc.boolean() }),
)

/** One call of the limiter; `units` is for penalty and reward. */
interface Op {
  readonly op: 'check' | 'limit' | 'get' | 'reset' | 'penalty' | 'reward'
  readonly units: number
}

const op: fc.Arbitrary<Op> = fc.record({
  op: fc.constantFrom('check', 'limit', 'get', 'reset', 'penalty', 'reward'),
  units: fc.integer({ min: 1, max: 3 }),
})

const never = new Promise<never>(() => {})

/**
 * A MemoryStore behind a script: each call does what the next act says, and once the script
 * is spent (or `behave` is set) every call is the MemoryStore's own, synchronous. `droppedSlots`
 * counts the concurrency slots given back by refunds that never reached the MemoryStore: those
 * stay taken there (a MemoryStore slot never expires), as documented.
 */
class ScriptedStore implements Store {
  readonly memory = new MemoryStore()
  behave = false
  droppedSlots = 0
  private at = 0

  constructor(private script: readonly Act[]) {}

  /** Misbehave again, as `acts` say. */
  misbehave(acts: readonly Act[]): void {
    this.behave = false
    this.script = acts
    this.at = 0
  }

  /** Run `inner` as the next act says; `drop` is told when it never reaches the store. */
  private call<T>(inner: () => T, drop?: () => void): T | Promise<T> {
    const a: Act =
      this.behave || this.at >= this.script.length
        ? { kind: 'ok', async: false }
        : this.script[this.at++]!
    if (a.kind !== 'ok' && a.kind !== 'late') drop?.()
    switch (a.kind) {
      case 'ok': {
        const out = inner()
        return a.async ? Promise.resolve(out) : out
      }
      case 'late': {
        const out = inner()
        return new Promise<T>((resolve) => setTimeout(() => resolve(out), LATE_MS))
      }
      case 'never':
        return never
      case 'thenable-never':
        return { then: () => undefined } as unknown as Promise<T>
      case 'then-throws':
        return {
          then: () => {
            throw new Error('then boom')
          },
        } as unknown as Promise<T>
      case 'reject':
        return Promise.reject(a.value)
      case 'throw':
        throw a.value
      case 'garbage':
        return (a.async ? Promise.resolve(a.value) : a.value) as T
    }
  }

  // Copies: the MemoryStore reuses its result objects, which an answer given later must not share.
  consume: Store['consume'] = (entries, now) =>
    this.call(() => this.memory.consume(entries, now).map((r) => ({ ...r })))
  refund: Store['refund'] = (entries: readonly RefundEntry[], now) =>
    this.call(
      () => this.memory.refund(entries, now),
      () => {
        for (const e of entries) {
          if (e.rule.algorithm.name === 'concurrency') this.droppedSlots += e.cost
        }
      },
    )
  peek: NonNullable<Store['peek']> = (entries, now) =>
    this.call(() => this.memory.peek(entries, now))
  reset: NonNullable<Store['reset']> = (entries) => this.call(() => this.memory.reset(entries))
  penalize: NonNullable<Store['penalize']> = (entries, now) =>
    this.call(() => this.memory.penalize(entries, now))
  close: NonNullable<Store['close']> = () => this.call(() => this.memory.close())
}

/** Settle-tracking: `done` turns true when `p` settles either way. */
function track<T>(p: Promise<T>): { done: () => boolean; result: Promise<T> } {
  let done = false
  const result = p.finally(() => {
    done = true
  })
  // Awaited later (or not at all): its rejection is checked, never left unhandled.
  result.catch(() => undefined)
  return { done: () => done, result }
}

beforeEach(() => {
  vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'setInterval', 'clearInterval'] })
})

afterEach(() => {
  vi.useRealTimers()
})

describe('a store that misbehaves in every way, on every call', () => {
  const unhandled = collectUnhandledRejections()

  it('every call of the limiter settles within its deadline, nothing is left unhandled, and with a well-behaved store afterwards the client is decided as if nothing had happened (property)', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(act, { maxLength: 60, size: 'max' }),
        fc.array(op, { minLength: 1, maxLength: 15 }),
        act,
        async (script, ops, atClose) => {
          let now = 1_000_000
          const store = new ScriptedStore(script)
          const limiter = createLimiter({
            rules: [
              {
                id: 'r',
                algorithm: 'token-bucket',
                limit: 3,
                window: 600,
                onLimit: { action: 'queue', maxWait: 200, maxQueue: 1 },
                ban: { after: 2, within: '1s', for: '1s' },
              },
              { id: 'c', algorithm: 'concurrency', limit: 2 },
            ],
            store,
            clock: () => now,
            decisionTimeoutMs: DECISION_MS,
            stateTimeoutMs: STATE_MS,
            closeTimeoutMs: CLOSE_MS,
          })
          const advance = async (ms: number): Promise<void> => {
            now += ms
            await vi.advanceTimersByTimeAsync(ms)
          }
          const decisions: Decision[] = []
          for (const o of ops) {
            let call: Promise<unknown>
            let bound = STATE_MS
            if (o.op === 'check' || o.op === 'limit') {
              bound = CHECK_BOUND_MS
              // Neither throws: a decision, at once or promised.
              const d = o.op === 'check' ? limiter.check(facts) : limiter.limit(IP, { rule: 'r' })
              call = Promise.resolve(d).then((x) => void decisions.push(x))
            } else if (o.op === 'get') call = limiter.get(IP)
            else if (o.op === 'reset') call = limiter.reset(IP)
            else if (o.op === 'penalty') call = limiter.penalty(IP, o.units, { rule: 'r' })
            else call = limiter.reward(IP, o.units)
            const t = track(call)
            await advance(bound)
            expect(t.done(), `${o.op} settled within ${bound} ms`).toBe(true)
            await t.result.then(
              () => undefined,
              (err: unknown) => {
                // check() and limit() never reject; the others reject with an Error.
                expect(o.op === 'check' || o.op === 'limit', `${o.op} rejected`).toBe(false)
                expect(err).toBeInstanceOf(Error)
              },
            )
          }
          for (const d of decisions) limiter.release(d)
          // Every late answer arrives, and is undone where it must be.
          await advance(2 * LATE_MS)

          // From here the store behaves: nothing the limiter holds may have leaked.
          store.behave = true
          expect(limiter.counters().inFlight.size).toBe(0)
          await limiter.reset(IP)
          const states = await limiter.get(IP)
          const r = states.find((s) => s.rule.id === 'r')!
          const c = states.find((s) => s.rule.id === 'c')!
          expect(r).toMatchObject({ remaining: 3, bannedForMs: 0 })
          expect(c.remaining).toBe(2 - store.droppedSlots)
          // Three units, then one queued (its queue has its one place free), then refused.
          for (let i = 0; i < 3; i++) {
            expect(await limiter.limit(IP, { rule: 'r' })).toMatchObject({
              allowed: true,
              action: 'allow',
              failedOpen: false,
            })
          }
          const queued = await limiter.limit(IP, { rule: 'r' })
          expect(queued).toMatchObject({ allowed: true, action: 'queue' })
          expect(await limiter.limit(IP, { rule: 'r' })).toMatchObject({ allowed: false })
          limiter.release(queued)

          // close() settles within closeTimeoutMs whatever the store does then.
          store.misbehave([atClose, atClose])
          const closed = track(limiter.close())
          await advance(CLOSE_MS)
          expect(closed.done(), 'close() settled').toBe(true)
          await closed.result.catch((err: unknown) => expect(err).toBeInstanceOf(Error))
          await new Promise((resolve) => setImmediate(resolve))
        },
      ),
      { numRuns: 200 },
    )
    expect(unhandled).toEqual([])
  }, 120_000)
})
