import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { GateSlots } from './gate-slots.js'

// The slot bookkeeping of a gate against a plain model (a map of what each key holds), and its
// memory: the per-client map never holds more than 4 × the clients holding slots + 1024 keys.

const bound = (s: GateSlots) => 4 * s.holders + 1024

describe('GateSlots', () => {
  it('property: totals, holders and per-rule counts equal the model’s; the map stays bounded', () => {
    const op = fc.record({
      take: fc.boolean(),
      key: fc.nat(3000),
      cost: fc.constantFrom(0, 1, 2, 0.1, 0.2, 0.5),
      rule: fc.constantFrom('a', 'b'),
    })
    fc.assert(
      fc.property(fc.array(op, { maxLength: 400, size: 'max' }), (ops) => {
        const slots = new GateSlots(true)
        // What each (key, rule) holds, as a list of the costs taken and not given back.
        const model = new Map<string, number[]>()
        for (const o of ops) {
          const id = `${o.key}|${o.rule}`
          const held = model.get(id) ?? []
          if (o.take) {
            slots.take(String(o.key), o.cost, o.rule)
            held.push(o.cost)
          } else {
            // Only what was taken is given back (a lease releases once).
            const i = held.indexOf(o.cost)
            if (i < 0) continue
            held.splice(i, 1)
            slots.release(String(o.key), o.cost, o.rule)
          }
          model.set(id, held)
          const sum = (f: (id: string) => boolean) =>
            [...model]
              .filter(([k]) => f(k))
              .reduce((n, [, c]) => n + c.reduce((x, y) => x + y, 0), 0)
          expect(slots.inFlight).toBeCloseTo(
            sum(() => true),
            6,
          )
          expect(slots.ofRule('a')).toBeCloseTo(
            sum((k) => k.endsWith('|a')),
            6,
          )
          const perKey = new Map<string, number>()
          for (const [k, c] of model) {
            const key = k.slice(0, k.indexOf('|'))
            perKey.set(key, (perKey.get(key) ?? 0) + c.reduce((x, y) => x + y, 0))
          }
          expect(slots.holders).toBe([...perKey.values()].filter((n) => n > 1e-9).length)
          expect(slots.trackedKeys).toBeLessThanOrEqual(bound(slots))
        }
      }),
      { numRuns: 200 },
    )
  })

  it('100k one-shot clients, each released: no holder left, the map within its bound', () => {
    const slots = new GateSlots(true)
    for (let i = 0; i < 100_000; i++) {
      slots.take(`client-${i}`, 1, 'a')
      slots.release(`client-${i}`, 1, 'a')
      expect(slots.trackedKeys).toBeLessThanOrEqual(bound(slots))
    }
    expect(slots.holders).toBe(0)
    expect(slots.inFlight).toBe(0)
    expect(slots.trackedKeys).toBeLessThanOrEqual(1024)
  })

  it('a burst of 10k clients that all end leaves the map within the bound of none', () => {
    const slots = new GateSlots(true)
    for (let i = 0; i < 10_000; i++) slots.take(`client-${i}`, 1, 'a')
    expect(slots.trackedKeys).toBe(10_000)
    for (let i = 0; i < 10_000; i++) slots.release(`client-${i}`, 1, 'a')
    expect(slots.trackedKeys).toBeLessThanOrEqual(1024)
  })

  it('a request of cost 0 holds nothing and makes no holder', () => {
    const slots = new GateSlots(true)
    slots.take('k', 0, 'a')
    expect([slots.inFlight, slots.holders, slots.trackedKeys]).toEqual([0, 0, 0])
    slots.release('k', 0, 'a')
    expect([slots.inFlight, slots.holders]).toEqual([0, 0])
  })
})
