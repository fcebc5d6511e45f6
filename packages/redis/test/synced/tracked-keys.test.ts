import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { testRule } from '@floodgate/core/testing'
import { hashTag } from '../../src/redis-key.js'
import { TrackedKeys, type Tracked } from '../../src/synced/tracked-keys.js'

function table(maxKeys = 1000): { keys: TrackedKeys; added: Tracked[] } {
  const added: Tracked[] = []
  return { keys: new TrackedKeys('pfx', maxKeys, (t) => added.push(t)), added }
}

describe('TrackedKeys', () => {
  const r1 = testRule('token-bucket', 10, 1000)
  const r2 = testRule('gcra', 5, 1000)

  it('creates an entry once, reports it, and finds it again by rule or stateId', () => {
    const { keys, added } = table()
    const t = keys.track(r1, 'alice')
    expect(t).toMatchObject({
      rule: r1,
      key: 'alice',
      redisKey: `pfx:{${hashTag('alice')}}:${r1.stateId}:synced`,
      tag: hashTag('alice'),
      pending: 0,
      unacked: [],
      known: false,
      share: 1,
      room: 10,
    })
    expect(keys.track(r1, 'alice')).toBe(t)
    expect(added).toEqual([t])
    expect(keys.find(r1, 'alice')).toBe(t)
    expect(keys.get(r1.stateId, 'alice')).toBe(t)
    expect(keys.find(r2, 'alice')).toBeUndefined()
    expect(keys.size).toBe(1)
  })

  it('untracks an entry once, and never a newer entry of the same key', () => {
    const { keys } = table()
    const old = keys.track(r1, 'k')
    keys.untrack(old)
    expect(keys.find(r1, 'k')).toBeUndefined()
    const fresh = keys.track(r1, 'k')
    keys.untrack(old)
    expect(keys.find(r1, 'k')).toBe(fresh)
    expect(keys.size).toBe(1)
  })

  it('retain keeps the listed rule states only', () => {
    const { keys } = table()
    keys.track(r1, 'a')
    keys.track(r2, 'a')
    keys.track(r2, 'b')
    keys.retain(new Set([r2.stateId]))
    expect(keys.size).toBe(2)
    expect(keys.find(r1, 'a')).toBeUndefined()
    expect([...keys.all()].map((t) => t.key)).toEqual(['a', 'b'])
    keys.clear()
    expect(keys.size).toBe(0)
    expect(keys.find(r2, 'a')).toBeUndefined()
  })

  it('retain keeps, retired, the entries of a removed rule that still hold units to send', () => {
    const { keys } = table()
    const sent = keys.track(r1, 'sent')
    const unsent = keys.track(r1, 'unsent')
    const unacked = keys.track(r1, 'unacked')
    unsent.pending = 2
    unacked.unacked.push(4, 1)
    keys.retain(new Set([r2.stateId]))
    expect([...keys.all()]).toEqual([unsent, unacked])
    expect([unsent.retired, unacked.retired, sent.retired]).toEqual([true, true, false])
    expect(keys.unsent()).toEqual({ unsent: 2, unconfirmed: 1 })
    // The rule is back: its entries are live again.
    keys.retain(new Set([r1.stateId]))
    expect(unsent.retired || unacked.retired).toBe(false)
    keys.retain(new Set())
    expect(keys.track(r1, 'unsent')).toBe(unsent)
    expect(unsent.retired).toBe(false)
  })

  it('past maxKeys, a new key drops the oldest entry whose units are all sent', () => {
    const { keys } = table(3)
    const [a, b, c] = ['a', 'b', 'c'].map((k) => keys.track(r1, k))
    a!.pending = 2 // not sent yet: kept
    b!.unacked.push(1, 3) // sent, outcome unknown: kept
    keys.track(r1, 'd')
    expect(keys.size).toBe(3)
    expect(keys.find(r1, 'c')).toBeUndefined()
    expect(keys.find(r1, 'a')).toBe(a)
    expect(keys.find(r1, 'b')).toBe(b)
    expect(c).toBeDefined()
  })

  it('past maxKeys, a flood of new keys drops idle entries however many busy ones come first', () => {
    // The first clients a host served are the first entries, and the busy ones among them
    // always have units to send: they must not hide the idle entries behind them, in their
    // own rule's map or in another rule's.
    fc.assert(
      fc.property(
        fc.integer({ min: 33, max: 200 }),
        fc.integer({ min: 1, max: 100 }),
        fc.boolean(),
        (busyCount, idleCount, idleInOtherRule) => {
          const maxKeys = busyCount + idleCount
          const { keys } = table(maxKeys)
          const busy = Array.from({ length: busyCount }, (_, i) => keys.track(r1, `busy-${i}`))
          for (const t of busy) t.pending = 1
          for (let i = 0; i < idleCount; i++) keys.track(idleInOtherRule ? r2 : r1, `idle-${i}`)
          for (let i = 0; i < 3 * maxKeys; i++) {
            // A one-off client, admitted and its units sent by the next round: idle again.
            keys.track(i % 2 === 0 ? r1 : r2, `flood-${i}`)
            // A search of 32 entries that meets only busy ones finds no room, at most
            // floor(busyCount / 32) times per turn, and one search more at the turn's end: with
            // busyCount a multiple of 32 and one idle entry the table reaches that bound (found by
            // sweeping every input of this property; it stays there over 100 x maxKeys new keys).
            expect(keys.size).toBeLessThanOrEqual(maxKeys + Math.floor(busyCount / 32) + 1)
            // The busy clients keep sending.
            for (const t of busy) t.pending++
          }
          // Not one busy entry was dropped.
          for (const t of busy) expect(keys.find(r1, t.key)).toBe(t)
        },
      ),
      {
        numRuns: 50,
        // The inputs where the table is largest (the old bound, ceil(busyCount / 32), was one
        // short there; random runs drew one of them about once in 1,400 runs).
        examples: [
          [192, 1, false],
          [160, 1, true],
        ],
      },
    )
  })

  it('past maxKeys with every entry holding units, grows rather than lose them', () => {
    const { keys } = table(2)
    for (const k of ['a', 'b', 'c']) keys.track(r1, k).pending = 1
    expect(keys.size).toBe(3)
  })

  it('dropping the last entry of a rule keeps the new entry of that rule findable', () => {
    const { keys } = table(1)
    keys.track(r1, 'a')
    const b = keys.track(r1, 'b')
    expect(keys.size).toBe(1)
    expect(keys.find(r1, 'b')).toBe(b)
    expect(keys.get(r1.stateId, 'b')).toBe(b)
    expect([...keys.all()]).toEqual([b])
  })

  it('agrees with a model of nested maps over any sequence of operations (property)', () => {
    const rules = [r1, r2, testRule('gcra', 1, 60_000)]
    const op = fc.oneof(
      fc.record({ kind: fc.constant('track' as const), rule: fc.nat(2), key: fc.nat(5) }),
      fc.record({ kind: fc.constant('find' as const), rule: fc.nat(2), key: fc.nat(5) }),
      fc.record({ kind: fc.constant('untrack' as const), rule: fc.nat(2), key: fc.nat(5) }),
      fc.record({ kind: fc.constant('retain' as const), keep: fc.subarray([0, 1, 2]) }),
      fc.record({ kind: fc.constant('send' as const), rule: fc.nat(2), key: fc.nat(5) }),
    )
    // size 'max': at fast-check's default size an array of maxLength 80 holds about ten operations,
    // too few to pass a maxKeys above ten.
    const opsArb = fc.array(op, { maxLength: 80, size: 'max' })
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 20 }), opsArb, (max, ops) => {
        const { keys } = table(max)
        // stateId → key → units unsent; a rule whose last key goes is forgotten (order counts).
        const model = new Map<string, Map<string, number>>()
        const size = (): number => [...model.values()].reduce((n, m) => n + m.size, 0)
        const remove = (state: string, key: string): void => {
          model.get(state)?.delete(key)
          if (model.get(state)?.size === 0) model.delete(state)
        }
        for (const o of ops) {
          if (o.kind === 'retain') {
            const keep = new Set(o.keep.map((i) => rules[i]!.stateId))
            keys.retain(keep)
            // A removed rule's entries with units still to send stay until they are sent.
            for (const [state, m] of model) {
              if (keep.has(state)) continue
              for (const [key, p] of m) if (p === 0) m.delete(key)
              if (m.size === 0) model.delete(state)
            }
            continue
          }
          const rule = rules[o.rule]!
          const [state, key] = [rule.stateId, String(o.key)]
          const t = keys.find(rule, key)
          expect(t !== undefined).toBe(model.get(state)?.has(key) === true)
          if (o.kind === 'track') {
            const before = new Set([...keys.all()])
            keys.track(rule, key).pending++ // admitted: must survive until sent
            if (model.get(state)?.has(key) !== true && size() >= max) {
              // Entries with nothing unsent are dropped, if there are any (the table is smaller
              // than one search, so the search finds them): one, two while past max; which
              // ones depends on where the last search stopped.
              const dropped = [...before].filter((e) => keys.find(e.rule, e.key) !== e)
              const idle = [...model].flatMap(([s, m]) =>
                [...m].filter(([, p]) => p === 0).map(([k]) => `${s} ${k}`),
              )
              expect(dropped.length).toBe(Math.min(idle.length, 2, size() - max + 1))
              for (const e of dropped) {
                expect(idle).toContain(`${e.rule.stateId} ${e.key}`)
                remove(e.rule.stateId, e.key)
              }
            }
            if (!model.has(state)) model.set(state, new Map())
            model.get(state)!.set(key, (model.get(state)!.get(key) ?? 0) + 1)
          } else if (o.kind === 'untrack' && t) {
            keys.untrack(t)
            remove(state, key)
          } else if (o.kind === 'send' && t) {
            t.pending = 0
            model.get(state)!.set(key, 0)
          }
          expect(keys.size).toBe(size())
        }
        const held = [...keys.all()].map((t) => `${t.rule.stateId} ${t.key}`)
        expect(held).toEqual([...model].flatMap(([s, m]) => [...m.keys()].map((k) => `${s} ${k}`)))
      }),
      { numRuns: 300 },
    )
  })
})
