import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { MemoryStore } from '@floodgate/core'
import {
  algorithms,
  type AlgorithmName,
  type AlgorithmResult,
  type CompiledRule,
  type ConsumeEntry,
  type RefundEntry,
  type StateEntry,
} from '@floodgate/core/algorithms'
import { testRule } from '@floodgate/core/testing'
import { redisKey } from '@floodgate/redis'
import { MAX_TTL_MS } from '../src/key-ttl.js'
import { CALLER_CLOCK_TTL_SLACK_MS } from '../src/redis-store.js'
import { scriptAlgorithms } from '../src/scripts/decide-script.js'
import type { WireMode } from '../src/wire-format.js'
import { callerClockStore } from './helpers/caller-clock-store.js'
import { redisAvailable, uniquePrefix } from './helpers/redis.js'
import { answers } from './helpers/results.js'

// Requests of several entries (a request with several rules), in every mode, against MemoryStore
// run request by request in the order Redis runs them. A batch compared with one call per
// request (batch-writes.test.ts) runs the same Lua on both sides; here the reference is core's
// TypeScript, so a fault of the several-entry path shows wherever the batch puts it.

const available = await redisAvailable()
const prefix = uniquePrefix('several-entries')

const ALGORITHMS = Object.keys(algorithms) as AlgorithmName[]
/** A concurrency slot outlives every run: MemoryStore's slots never expire. */
const LEASE_MS = 1_000_000_000
const T0 = 1_763_000_000_000
/** Client keys per run: few, so that entries and requests meet on the same keys. */
const CLIENTS = 3
/** A name no store gives a slot (RedisStore's are whole numbers from 1). */
const NEVER_TAKEN = 0.5

/** A rule of the run as the generator draws it. */
interface DrawnRule {
  algorithm: AlgorithmName
  limit: number
  windowMs: number
  extraBurst: number
  /** Whether its entries may wait (`maxWaitMs`). */
  queues: boolean
}

const drawnRule = (algorithm: fc.Arbitrary<AlgorithmName>): fc.Arbitrary<DrawnRule> =>
  fc.record({
    algorithm,
    limit: fc.integer({ min: 1, max: 5 }),
    windowMs: fc.constantFrom(10, 1000, 60_000),
    extraBurst: fc.integer({ min: 0, max: 2 }),
    queues: fc.boolean(),
  })

/** A state of the run: its rule (modulo the run's rules) and its client. */
interface DrawnState {
  rule: number
  client: number
}

const drawnState = { rule: fc.nat({ max: 3 }), client: fc.nat({ max: CLIENTS - 1 }) }

/** One entry of a request: its state and its terms. */
interface DrawnEntry extends DrawnState {
  cost: number
  wait: number
  shadow: boolean
  queueFull: boolean
  /** A refund of a concurrency slot: which of the slots the client holds it gives back. */
  slot: number
}

const drawnEntry: fc.Arbitrary<DrawnEntry> = fc.record({
  ...drawnState,
  cost: fc.constantFrom(1, 1, 1, 2, 0, 0.5, 3),
  wait: fc.constantFrom(50, 400, 3000),
  shadow: fc.constantFrom(false, false, false, true),
  queueFull: fc.boolean(),
  slot: fc.nat({ max: 3 }),
})

interface DrawnRequest {
  mode: WireMode
  entries: DrawnEntry[]
}

const drawnRequest: fc.Arbitrary<DrawnRequest> = fc.record({
  mode: fc.constantFrom<WireMode>('c', 'c', 'c', 'c', 'r', 'r', 'p', 'x', 'f'),
  entries: fc.oneof(
    { weight: 1, arbitrary: fc.array(drawnEntry, { minLength: 1, maxLength: 1 }) },
    { weight: 4, arbitrary: fc.array(drawnEntry, { minLength: 2, maxLength: 3 }) },
  ),
})

/** Requests started in one turn (they share script calls), `dt` ms after the last turn. */
const step = fc.record({
  dt: fc.constantFrom(0, 0, 1, 7, 40, 150, 333, 700, 1500, -20),
  requests: fc.array(drawnRequest, { minLength: 1, maxLength: 6 }),
})

/**
 * Values that are not Floodgate's at a state's key before the run, each of which RedisStore
 * promises to read as fresh (docs/failure-modes.md): a string that is no state, a state of the
 * wrong length, one holding a NaN or a negative number, a key of another type.
 */
type ForeignKind = 'text' | 'wrong-size' | 'nan' | 'negative' | 'hash'

interface Foreign extends DrawnState {
  kind: ForeignKind
}

const foreign: fc.Arbitrary<Foreign> = fc.record({
  ...drawnState,
  kind: fc.constantFrom<ForeignKind>('text', 'wrong-size', 'nan', 'negative', 'hash'),
})

/** The bytes of a foreign string value (see {@link ForeignKind}) at a key of `rule`. */
function foreignBytes(rule: CompiledRule, kind: Exclude<ForeignKind, 'hash'>): Buffer {
  if (kind === 'text') return Buffer.from('not a floodgate state') // 21 bytes: no whole double
  // Concurrency leases are any whole number of doubles: 20 bytes is the wrong length.
  const leases = rule.algorithm.name === 'concurrency'
  if (kind === 'wrong-size' && leases) return Buffer.alloc(20, 1)
  const size = leases ? 2 : rule.algorithm.stateSize(rule.params)
  const doubles: number[] = Array<number>(kind === 'wrong-size' ? size + 1 : size).fill(T0)
  if (kind === 'nan') doubles[0] = NaN
  if (kind === 'negative') doubles[0] = -1
  const raw = Buffer.alloc(doubles.length * 8)
  doubles.forEach((d, i) => raw.writeDoubleLE(d, i * 8))
  return raw
}

/**
 * When the state `raw` (as Redis holds it, of `rule`) is fresh again, on the caller's clock at
 * `nowMs`: what its TTL counts down to.
 */
function idleAt(rule: CompiledRule, raw: Buffer, nowMs: number): number {
  const doubles = Array.from({ length: raw.length / 8 }, (_, i) => raw.readDoubleLE(i * 8))
  // Leases in pairs: (expiry, units), or (-name, 0) after a named lease. The newest expiry.
  if (rule.algorithm.name === 'concurrency') {
    return Math.max(nowMs, ...doubles.filter((_, i) => i % 2 === 0))
  }
  return rule.algorithm.idleAtMs(Float64Array.from(doubles), 0, rule.params, nowMs)
}

/** A turn of the run: its `now`, and the wall-clock ms before its requests and after them. */
interface Turn {
  now: number
  from: number
  to: number
}

/**
 * Whether a key that holds `raw` and expires at `expiresAt` (wall clock, ms) was written, with
 * a TTL of the state's useful life plus the caller clock's slack, in one of `turns`.
 */
function writtenIn(
  turns: readonly Turn[],
  rule: CompiledRule,
  raw: Buffer,
  expiresAt: number,
): boolean {
  return turns.some((t) => {
    // The script sums the life from the state's own times minus now: it may round the other
    // way by a millisecond, and the two clocks read whole milliseconds.
    const life = Math.ceil(idleAt(rule, raw, t.now) - t.now)
    if (!(life > 0)) return false
    const ttl = Math.min(life + CALLER_CLOCK_TTL_SLACK_MS, MAX_TTL_MS)
    return expiresAt >= t.from + ttl - 2 && expiresAt <= t.to + ttl + 2
  })
}

/**
 * The script calls of requests started in one turn, in the order Redis runs them (see
 * BatchQueue.enqueue): the first request finds nothing in flight and leaves at once, alone; the
 * others share one call per script (the set of their entries' algorithms), the calls leaving in
 * the order their first request started. A call decides its requests in order.
 */
function scriptCalls(scripts: readonly string[]): number[][] {
  const calls = new Map<string, number[]>()
  scripts.forEach((script, i) => {
    if (i === 0) return
    const call = calls.get(script)
    if (call) call.push(i)
    else calls.set(script, [i])
  })
  return [[0], ...calls.values()]
}

/** A request as both stores are asked it. */
interface Request {
  mode: WireMode
  /** Each entry's rule index and client: its state. */
  states: string[]
  consume: ConsumeEntry[]
  /** Refund and penalize entries; a refund's `held` says the slot it names is still taken. */
  give: (RefundEntry & { held?: boolean })[]
  script: string
}

/** What the runs of one test exercised: several-entry requests by mode and by call. */
type Seen = Record<string, number>

const count = (seen: Seen, what: string): void => {
  seen[what] = (seen[what] ?? 0) + 1
}

describe.skipIf(!available)('RedisStore on requests of several entries', () => {
  const redis = callerClockStore(prefix, { concurrencyLeaseMs: LEASE_MS })

  let run = 0
  for (const focus of ALGORITHMS) {
    it(`answers and keeps state as MemoryStore, in every mode, beside every algorithm: ${focus} (property)`, async () => {
      const seen: Seen = {}
      await fc.assert(
        fc.asyncProperty(
          drawnRule(fc.constant(focus)),
          fc.array(drawnRule(fc.constantFrom(...ALGORITHMS)), { minLength: 1, maxLength: 3 }),
          fc.array(foreign, { maxLength: 3 }),
          fc.array(step, { minLength: 1, maxLength: 12 }),
          async (first, others, foreigners, steps) => {
            run++
            const drawn = [first, ...others]
            const rules = drawn.map((r) =>
              testRule(r.algorithm, r.limit, r.windowMs, { burst: r.limit + r.extraBurst }),
            )
            const clientKey = (c: number): string => `${run}:${c}`
            const keyOf = (rule: number, client: number): string =>
              redisKey(prefix, clientKey(client), rules[rule]!.stateId)
            const allKeys = rules.flatMap((_, r) =>
              Array.from({ length: CLIENTS }, (_, c) => keyOf(r, c)),
            )
            const model = new MemoryStore()
            // The concurrency slots each state holds, by name (RedisStore's) and units, and
            // the names given back or dropped by a reset: releasing one frees nothing.
            const held = new Map<string, Map<number, number>>()
            const spent = new Map<string, number>()
            const heldBy = (state: string): Map<number, number> => {
              let slots = held.get(state)
              if (!slots) held.set(state, (slots = new Map()))
              return slots
            }
            // The foreign value written at each key before the run.
            const foreignAt = new Map<string, Buffer | 'hash'>()
            try {
              for (const f of foreigners) {
                const r = f.rule % rules.length
                const key = keyOf(r, f.client)
                await redis.admin.del(key)
                if (f.kind === 'hash') {
                  await redis.admin.hset(key, 'f', '1')
                  foreignAt.set(key, 'hash')
                } else {
                  const raw = foreignBytes(rules[r]!, f.kind)
                  await redis.admin.set(key, raw)
                  foreignAt.set(key, raw)
                }
              }

              let now = T0 + run * 10_000_000
              const turns: Turn[] = []
              for (const [si, s] of steps.entries()) {
                now += s.dt
                const from = Date.now()
                // Slots a refund of this turn already names: another entry names another.
                const named = new Set<number>()
                const requests = s.requests.map((d): Request => {
                  let mode = d.mode
                  const entries = d.entries.map((e) => ({ ...e, rule: e.rule % rules.length }))
                  // Penalize is for rules that carry debt (token bucket, GCRA) only.
                  const chargeable = entries.filter((e) => rules[e.rule]!.algorithm.charge)
                  if (mode === 'f' && chargeable.length === 0) mode = 'p'
                  const used = mode === 'f' ? chargeable : entries
                  const states = used.map((e) => `${e.rule}:${e.client}`)
                  const give = used.map((e, j): RefundEntry & { held?: boolean } => {
                    const rule = rules[e.rule]!
                    const key = clientKey(e.client)
                    if (mode !== 'r' || rule.algorithm.name !== 'concurrency') {
                      return { rule, key, cost: e.cost }
                    }
                    // A slot is given back by its name, with its units, as the limiter does;
                    // else a name given back already, or never given (frees nothing).
                    const slots = [...heldBy(states[j]!)].filter(([name]) => !named.has(name))
                    const pick = slots[e.slot % (slots.length + 1)]
                    if (pick === undefined) {
                      return {
                        rule,
                        key,
                        cost: e.cost,
                        lease: spent.get(states[j]!) ?? NEVER_TAKEN,
                      }
                    }
                    named.add(pick[0])
                    return { rule, key, cost: pick[1], lease: pick[0], held: true }
                  })
                  const consume = used.map((e): ConsumeEntry => {
                    const maxWaitMs = drawn[e.rule]!.queues ? e.wait : 0
                    return {
                      rule: rules[e.rule]!,
                      key: clientKey(e.client),
                      cost: e.cost,
                      maxWaitMs,
                      shadow: e.shadow,
                      queueFull: maxWaitMs > 0 && e.queueFull,
                    }
                  })
                  const script = scriptAlgorithms(used.map((e) => rules[e.rule]!.algorithm.name))
                  return { mode, states, consume, give, script: script.join(',') }
                })

                // All started in one turn: they share script calls.
                const got = await Promise.all(
                  requests.map(async (q): Promise<readonly AlgorithmResult[] | undefined> => {
                    switch (q.mode) {
                      case 'c':
                        return redis.store.consume(q.consume, now)
                      case 'p':
                        return redis.store.peek(q.consume, now)
                      case 'x':
                        return void (await redis.store.reset(q.consume, now))
                      case 'f':
                        return void (await redis.store.penalize(q.give, now))
                      case 'r':
                        return void (await redis.store.refund(q.give, now))
                    }
                  }),
                )

                turns.push({ now, from, to: Date.now() })
                const calls = scriptCalls(requests.map((q) => q.script))
                for (const [ci, call] of calls.entries()) {
                  const states = call.flatMap((i) => [...new Set(requests[i]!.states)])
                  if (new Set(states).size < states.length)
                    count(seen, 'state in two requests of a call')
                  for (const i of call) {
                    const q = requests[i]!
                    const where = `step ${si} (+${now - T0 - run * 10_000_000} ms), request ${i} (${q.mode}), call ${ci} of [${calls.map((c) => c.join(' ')).join('] [')}]`
                    if (q.states.length > 1) {
                      count(seen, `${q.mode} ${call.length > 1 ? 'batched' : 'alone'}`)
                      count(seen, q.script.includes(',') ? 'algorithms mixed' : 'one algorithm')
                      if (new Set(q.states).size < q.states.length) count(seen, 'state repeated')
                    }
                    switch (q.mode) {
                      case 'c': {
                        const want = answers(model.consume(q.consume, now))
                        const answer = got[i]!
                        expect(answers(answer), where).toEqual(want)
                        // A refused request takes no slot, whatever its entries answered.
                        if (!want.every((w, j) => q.consume[j]!.shadow || w.allowed)) break
                        answer.forEach((a, j) => {
                          if (a.lease !== undefined && q.consume[j]!.cost > 0) {
                            heldBy(q.states[j]!).set(a.lease, q.consume[j]!.cost)
                          }
                        })
                        break
                      }
                      case 'p':
                        expect(answers(got[i]!), where).toEqual(answers(model.peek(q.consume, now)))
                        break
                      case 'x':
                        model.reset(q.consume)
                        for (const st of q.states) {
                          // The reset dropped the slots: giving one back frees nothing.
                          for (const name of heldBy(st).keys()) spent.set(st, name)
                          held.delete(st)
                        }
                        break
                      case 'f':
                        model.penalize(q.give, now)
                        break
                      case 'r': {
                        // RedisStore frees a slot named that it still holds, and nothing for
                        // a name it does not (MemoryStore has no names: it is not asked).
                        const give = q.give.filter((e, j) => {
                          if (e.lease === undefined) return true
                          const slots = heldBy(q.states[j]!)
                          if (!e.held || !slots.has(e.lease)) {
                            count(seen, 'slot given back twice or never taken')
                            return false
                          }
                          count(seen, 'slot given back')
                          slots.delete(e.lease)
                          spent.set(q.states[j]!, e.lease)
                          return true
                        })
                        model.refund(give, now)
                        break
                      }
                    }
                  }
                }
              }

              // The states left: every one read at once, now and as time passes, and every key
              // Floodgate wrote expires when its state is fresh again (plus the slack).
              const everyState: StateEntry[] = rules.flatMap((rule) =>
                Array.from({ length: CLIENTS }, (_, c) => ({ rule, key: clientKey(c) })),
              )
              // Each answer under its rule and client, so that a difference says whose it is.
              const named = (rs: readonly AlgorithmResult[]): Record<string, AlgorithmResult> =>
                Object.fromEntries(
                  answers(rs).map((a, i) => {
                    const r = Math.floor(i / CLIENTS)
                    return [`rule ${r} (${rules[r]!.algorithm.name}), client ${i % CLIENTS}`, a]
                  }),
                )
              for (const later of [0, 1, 100, 1000, 60_000]) {
                expect(
                  named(await redis.store.peek(everyState, now + later)),
                  `every state, ${later} ms after the last step`,
                ).toEqual(named(model.peek(everyState, now + later)))
              }
              for (const [r, rule] of rules.entries()) {
                for (let c = 0; c < CLIENTS; c++) {
                  const key = keyOf(r, c)
                  const type = await redis.admin.type(key)
                  const was = foreignAt.get(key)
                  // A foreign value no write replaced stays as it was; the rest is Floodgate's.
                  if (type === 'none' || (type === 'hash' && was === 'hash')) continue
                  const raw = await redis.admin.getBuffer(key)
                  if (was instanceof Buffer && raw?.equals(was) === true) continue
                  expect(type, key).toBe('string')
                  const expiresAt = Number(await redis.admin.call('PEXPIRETIME', key))
                  expect(
                    writtenIn(turns, rule, raw!, expiresAt),
                    `${key} (rule ${r}, client ${c}) expires at ${expiresAt}: the useful life of its state from no turn's now (${JSON.stringify(turns)})`,
                  ).toBe(true)
                }
              }
            } finally {
              await redis.admin.del(...allKeys)
            }
          },
        ),
        { numRuns: Number(process.env.FG_RUNS ?? 50) },
      )
      // The property compared what it meant to: several-entry requests of every mode, alone
      // and batched, of one algorithm and of several, on a state named twice in a request and
      // in a call, and concurrency slots given back, held or not.
      const modes = focus === 'token-bucket' || focus === 'gcra' ? 'crpxf' : 'crpx'
      for (const m of modes) expect(seen[`${m} batched`], `${m} batched`).toBeGreaterThan(0)
      const also = ['c alone', 'algorithms mixed', 'one algorithm', 'state repeated']
      also.push('state in two requests of a call')
      if (focus === 'concurrency')
        also.push('slot given back', 'slot given back twice or never taken')
      for (const what of also) expect(seen[what], what).toBeGreaterThan(0)
    })
  }
})
