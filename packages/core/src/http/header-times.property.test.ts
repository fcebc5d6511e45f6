import { IncomingMessage, ServerResponse } from 'node:http'
import { Socket } from 'node:net'
import fc from 'fast-check'
import { afterEach, describe, expect, it, vi } from 'vitest'
import type { Decision } from '../decision.js'
import { createLimiter } from '../limiter.js'
import { ALGORITHM_NAMES } from '../rules/algorithm-catalog.js'
import { MemoryStore } from '../stores/memory-store.js'
import type { Store } from '../stores/store.js'
import type { ProblemDetails } from './adapter-options.js'
import { enforce, type HttpIo } from './enforce.js'
import { formatHeaders, HEADER_FORMATS } from './headers.js'

// Every time a response carries must count from the instant the limiter decided at. The clock
// here is both the limiter's and Date.now(), as in production, and it moves on by 0..N ms
// between the store's answer and the headers: a header that reads the clock again is late.

interface Ctx {
  readonly req: IncomingMessage
  readonly res: ServerResponse
  decision?: Decision
  body?: ProblemDetails
}

const io: HttpIo<Ctx, void> = {
  response: (ctx) => ctx.res,
  request: (ctx) => ctx.req,
  attach: (ctx, info) => {
    ctx.decision = info.decision
  },
  proceed: () => {},
  reject: (ctx, rejection) => {
    ctx.body = rejection.body
  },
  abandon: () => {},
}

const ceilSeconds = (ms: number): number => Math.ceil(ms / 1000)

/** The `t=` of one rule's item in a `RateLimit` value. */
function tOf(field: string, ruleId: string): number {
  const m = new RegExp(`"${ruleId}";r=\\d+;t=(\\d+)`).exec(field)
  if (m === null) throw new Error(`no item for ${ruleId} in ${field}`)
  return Number(m[1])
}

const step = fc.record({
  advanceMs: fc.integer({ min: 0, max: 3_000 }),
  tickMs: fc.integer({ min: 0, max: 1_500 }),
  cost: fc.integer({ min: 1, max: 3 }),
})

afterEach(() => {
  vi.restoreAllMocks()
})

describe('time headers count from the decision', () => {
  it('X-RateLimit-Reset, Retry-After, RateLimit and the 429 body agree with the decision, however late the headers are written', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom(...ALGORITHM_NAMES),
        fc.constantFrom(...HEADER_FORMATS),
        fc.integer({ min: 1, max: 4 }),
        fc.constantFrom<number>(1_000, 2_000, 10_000, 60_000),
        fc.boolean(),
        fc.boolean(),
        // A start anywhere within a second, or on one (where a late reading shows most).
        fc.oneof(fc.constant(0), fc.integer({ min: 0, max: 999 })),
        fc.array(step, { minLength: 1, maxLength: 12 }),
        async (algorithm, format, limit, windowMs, twoRules, asyncStore, offsetMs, steps) => {
          let now = 1_700_000_040_000 + offsetMs
          vi.spyOn(Date, 'now').mockImplementation(() => now)
          const memory = new MemoryStore()
          let askedAt = -1
          let tickMs = 0
          // The store answers, then the clock moves on before the headers are written.
          const store: Store = {
            consume: (entries, nowMs) => {
              askedAt = nowMs
              const results = memory.consume(entries, nowMs).map((r) => ({ ...r }))
              if (!asyncStore) {
                now += tickMs
                return results
              }
              return Promise.resolve().then(() => {
                now += tickMs
                return results
              })
            },
            refund: (entries, nowMs) => memory.refund(entries, nowMs),
          }
          const rules = [{ id: 'a', algorithm, limit, window: windowMs }]
          if (twoRules) rules.push({ id: 'b', algorithm, limit: limit + 1, window: windowMs * 2 })
          const limiter = createLimiter({ rules, store, clock: () => now })
          const settings = { format, shadowHeader: false }
          for (const s of steps) {
            now += s.advanceMs
            tickMs = s.tickMs
            const req = new IncomingMessage(new Socket())
            const res = new ServerResponse(req)
            const ctx: Ctx = { req, res }
            const facts = { method: 'GET', path: '/', ip: '192.0.2.1', headers: {}, cost: s.cost }
            await enforce(limiter, facts, ctx, io, settings)
            const d = ctx.decision!
            const at = askedAt
            expect(d.decidedAtMs).toBe(at)
            const h = (name: string): string | undefined => {
              const v = res.getHeader(name)
              return v === undefined ? undefined : String(v)
            }
            const retryAfter = h('retry-after')
            const xReset = h('x-ratelimit-reset')
            if (format === 'legacy' || format === 'both') {
              expect(Number(xReset)).toBe(ceilSeconds(at + d.resetMs))
            }
            if (d.action === 'reject') {
              expect(Number(retryAfter)).toBe(Math.max(1, ceilSeconds(d.retryAfterMs)))
              expect(ctx.body?.retryAfter).toBe(Number(retryAfter))
              // The quota is not back before the request may be retried (a request costing
              // more than the limit never passes; its headers promise nothing either way).
              if (xReset !== undefined && s.cost <= limit) {
                expect(Number(xReset)).toBeGreaterThanOrEqual(ceilSeconds(at + d.retryAfterMs))
              }
              if (format === 'ietf' || format === 'both') {
                expect(tOf(h('ratelimit')!, d.rule!.id)).toBe(Number(retryAfter))
              }
            } else {
              expect(retryAfter).toBeUndefined()
              if (format === 'both') {
                // The relative and the epoch reset name the same instant, each rounded up.
                const t = tOf(h('ratelimit')!, d.rule!.id)
                expect(Number(xReset) - Math.floor(at / 1000) - t).toBeOneOf([0, 1])
              }
            }
            if (format === 'draft-7') {
              expect(h('ratelimit')).toContain(`reset=${ceilSeconds(d.resetMs)}`)
            }
            // formatHeaders, called later still, writes what the adapters write.
            now += 1
            for (const [name, value] of formatHeaders(d, { format })) {
              expect([name, h(name)]).toEqual([name, value])
            }
            res.emit('close')
          }
        },
      ),
      { numRuns: 300 },
    )
  })
})
