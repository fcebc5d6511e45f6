import { describe, expect, it } from 'vitest'
import { createLimiter } from './limiter.js'
import type { RequestFacts } from './request-facts.js'
import type { ConsumeEntry, Store } from './stores/store.js'
import { MemoryStore } from './stores/memory-store.js'

const at = (ip: string, path = '/'): RequestFacts => ({ method: 'GET', path, ip, headers: {} })

/** A MemoryStore that counts the entries it is asked to consume. */
function countingStore(): Store & { consumed: number } {
  const inner = new MemoryStore()
  const store = {
    consumed: 0,
    synchronous: true,
    consume(entries: readonly ConsumeEntry[], nowMs: number) {
      store.consumed += entries.length
      return inner.consume(entries, nowMs)
    },
    refund: inner.refund.bind(inner),
  }
  return store
}

const RULES = [{ id: 'api', match: '/api/**', limit: 1, window: '1m' }]

describe('limiter: allow and deny lists, unmatched requests', () => {
  it('refuses a denied client before any store call, with the configured status', () => {
    const store = countingStore()
    const limiter = createLimiter({
      rules: RULES,
      store,
      deny: { ips: ['203.0.113.0/24'] },
      denyStatus: 503,
    })
    const d = limiter.check(at('::ffff:203.0.113.5', '/api/x'))
    expect(d).toMatchObject({ allowed: false, action: 'reject', status: 503, reason: 'deny-list' })
    expect(store.consumed).toBe(0)
    expect(limiter.counters().total).toMatchObject({ rejected: 1, denied: 1 })
  })

  it('lets an allow-listed client through uncounted; the deny list wins over the allow list', () => {
    const store = countingStore()
    const limiter = createLimiter({
      rules: RULES,
      store,
      allow: { ips: ['10.0.0.0/8'] },
      deny: { ips: ['10.6.6.6'] },
    })
    for (let i = 0; i < 3; i++) {
      expect(limiter.check(at('10.1.1.1', '/api/x'))).toMatchObject({
        allowed: true,
        reason: 'allow-list',
        outcomes: [],
      })
    }
    expect(limiter.check(at('10.6.6.6', '/api/x'))).toMatchObject({
      status: 403,
      reason: 'deny-list',
    })
    expect(store.consumed).toBe(0)
    expect(limiter.counters().total).toMatchObject({
      allowed: 3,
      allowListed: 3,
      denied: 1,
      rejected: 1,
    })
  })

  it("counts requests no rule matches, allowing them by default and refusing them under 'reject'", () => {
    const open = createLimiter({ rules: RULES })
    expect(open.check(at('198.51.100.1', '/health'))).toMatchObject({
      allowed: true,
      reason: 'unmatched',
    })
    const matched = open.check(at('198.51.100.1', '/api/x'))
    expect(matched).toMatchObject({ allowed: true })
    expect(matched).not.toHaveProperty('reason')
    expect(open.counters().total).toMatchObject({ allowed: 2, unmatched: 1 })

    const strict = createLimiter({ rules: RULES, unmatched: 'reject' })
    expect(strict.check(at('198.51.100.1', '/health'))).toMatchObject({
      allowed: false,
      action: 'reject',
      status: 503,
      reason: 'unmatched',
    })
    expect(strict.counters().total).toMatchObject({ rejected: 1, unmatched: 1 })
    expect(strict.counters().byRule.get('api')).toMatchObject({ unmatched: 0 })
  })

  it.each([
    [{ unmatched: 'deny' }, /unmatched: expected 'allow' or 'reject', got "deny"/],
    [{ denyStatus: 402 }, /denyStatus: expected 403, 404, 429 or 503, got 402/],
    [{ deny: { ips: ['10.0.0.300'] } }, /deny\.ips\[0\]: expected an IP address or CIDR range/],
    [{ allow: 'everyone' }, /allow: expected an object, got "everyone"/],
  ])('refuses %o at construction', (options, message) => {
    expect(() => createLimiter(options as never)).toThrow(message)
  })
})
