import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { IdleQueue } from './idle-queue.js'

describe('IdleQueue', () => {
  it('pops records in the order of their times, whatever pushes and pops interleave (property)', () => {
    const op = fc.oneof(
      fc.record({ push: fc.oneof(fc.double({ noNaN: true }), fc.integer()).map((x) => x + 0) }),
      fc.constant({ pop: true as const }),
    )
    fc.assert(
      fc.property(fc.array(op, { maxLength: 200, size: 'max' }), (ops) => {
        const q = new IdleQueue(0)
        const model: { at: number; slot: number }[] = []
        const out = { key: '', slot: 0 }
        ops.forEach((o, i) => {
          if ('push' in o) {
            q.push(o.push, `k${i}`, i)
            model.push({ at: o.push, slot: i })
          } else if (model.length > 0) {
            const least = Math.min(...model.map((r) => r.at))
            expect(q.topAt()).toBe(least)
            q.pop(out)
            const at = model.find((r) => r.slot === out.slot)!.at
            expect([at, out.key]).toEqual([least, `k${out.slot}`])
            model.splice(
              model.findIndex((r) => r.slot === out.slot),
              1,
            )
          }
          expect(q.size).toBe(model.length)
        })
        if (model.length === 0) expect(q.topAt()).toBe(Number.POSITIVE_INFINITY)
      }),
    )
  })
})
