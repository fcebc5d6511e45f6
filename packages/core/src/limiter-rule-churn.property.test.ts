import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { createLimiter } from './limiter.js'
import { RETIRED_RULE_COUNTERS } from './limiter-rules.js'
import type { RuleInput } from './rules/schema.js'

// Rules come and go (a rules service edited for months, rule ids generated per tenant or per
// incident). counters().byRule must not keep every id ever seen: it holds the rules in force
// plus the most recently retired ones, whose final counts a metrics scrape may still want.

const facts = { method: 'GET', path: '/', ip: '203.0.113.7', headers: {} }
const rule = (id: string): RuleInput => ({ id, limit: 1_000_000, window: '1h' })

describe('counters().byRule under rule churn', () => {
  it('property: holds the rules in force and the last retired ones, counts continuing for a rule that comes back in time', () => {
    const ids = Array.from({ length: 400 }, (_, i) => `r${i}`)
    const set = fc.uniqueArray(fc.constantFrom(...ids), { minLength: 10, maxLength: 30 })
    fc.assert(
      fc.property(fc.array(set, { minLength: 10, maxLength: 60, size: 'max' }), (sets) => {
        const limiter = createLimiter({
          rules: [rule('route-wide')],
          clock: () => 0,
        })
        // The model: each tracked rule's allowed count, and the retired ones, oldest first.
        const counts = new Map<string, number>([['route-wide', 0]])
        let inForce = new Set(['route-wide'])
        const retired: string[] = []
        for (const next of sets) {
          limiter.updateRules(next.map(rule))
          const now = new Set(next)
          for (const id of inForce) {
            if (!now.has(id)) retired.push(id)
          }
          for (const id of now) {
            const at = retired.indexOf(id)
            if (at >= 0) retired.splice(at, 1)
            if (!counts.has(id)) counts.set(id, 0)
          }
          while (retired.length > RETIRED_RULE_COUNTERS) counts.delete(retired.shift()!)
          inForce = now
          void limiter.check(facts)
          for (const id of now) counts.set(id, counts.get(id)! + 1)

          const byRule = limiter.counters().byRule
          expect(byRule.size).toBeLessThanOrEqual(inForce.size + RETIRED_RULE_COUNTERS)
          expect(new Map([...byRule].map(([id, c]) => [id, c.allowed]))).toEqual(counts)
        }
      }),
      { numRuns: 60 },
    )
  })
})
