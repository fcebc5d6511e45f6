import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, expect, it, vi } from 'vitest'
import { FloodgateError, RulesValidationError } from './errors.js'
import { createLimiter } from './limiter.js'
import type { Logger } from './logger.js'
import type { RequestFacts } from './request-facts.js'
import { fileRules } from './rules/sources/file-rules.js'
import type { RuleInput } from './rules/schema.js'
import { MemoryStore } from './stores/memory-store.js'
import type { ConsumeEntry, Store } from './stores/store.js'

const at = (ip: string, path = '/', headers: Record<string, string> = {}): RequestFacts => ({
  method: 'GET',
  path,
  ip,
  headers,
})

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

const spyLogger = () =>
  ({ debug: vi.fn(), info: vi.fn(), warn: vi.fn(), error: vi.fn() }) satisfies Logger

describe('limiter: deny and allow lists in the rules', () => {
  it("refuses a client on a matched rule's deny list before any store call, naming the rule", () => {
    const store = countingStore()
    const limiter = createLimiter({
      store,
      rules: [
        { id: 'all', limit: 5, window: '1m' },
        {
          id: 'admin',
          match: '/admin/**',
          limit: 5,
          window: '1m',
          deny: { ips: ['192.0.2.0/24'], status: 404 },
        },
      ],
    })
    expect(limiter.check(at('192.0.2.9', '/admin/users'))).toMatchObject({
      allowed: false,
      status: 404,
      reason: 'deny-list',
      outcomes: [],
    })
    expect(
      (limiter.check(at('192.0.2.9', '/admin/users')) as { rule: { id: string } }).rule.id,
    ).toBe('admin')
    expect(store.consumed).toBe(0)
    // Where the rule does not apply, its list does not either.
    expect(limiter.check(at('192.0.2.9', '/'))).toMatchObject({ allowed: true, remaining: 4 })
    const counts = limiter.counters()
    expect(counts.total).toMatchObject({ denied: 2, rejected: 2, allowed: 1 })
    expect(counts.byRule.get('admin')).toMatchObject({ denied: 2, rejected: 2 })
  })

  it("leaves a client on a rule's allow list uncounted by that rule only", () => {
    const limiter = createLimiter({
      rules: [
        { id: 'per-ip', limit: 1, window: '1m', allow: { keys: { 'header:x-partner': ['acme'] } } },
        { id: 'all', limit: 3, window: '1m' },
      ],
    })
    const partner = at('198.51.100.1', '/', { 'x-partner': 'acme' })
    expect(limiter.check(partner)).toMatchObject({ allowed: true, remaining: 2 })
    expect(limiter.check(partner)).toMatchObject({ allowed: true, remaining: 1 })
    expect(limiter.counters().byRule.get('per-ip')).toMatchObject({ allowListed: 2, allowed: 2 })
    // Listed by every rule that would count it: allowed as allow-listed, nothing counted.
    const only = createLimiter({
      rules: [{ id: 'per-ip', limit: 1, window: '1m', allow: { ips: ['10.0.0.0/8'] } }],
    })
    for (let i = 0; i < 3; i++) {
      expect(only.check(at('10.9.9.9'))).toMatchObject({ allowed: true, reason: 'allow-list' })
    }
  })

  it("a shadow rule's deny list refuses nothing; it counts what it would have refused", () => {
    const limiter = createLimiter({
      rules: [{ id: 'try', limit: 5, window: '1m', shadow: true, deny: { ips: ['192.0.2.0/24'] } }],
    })
    expect(limiter.check(at('192.0.2.9'))).toMatchObject({ allowed: true })
    expect(limiter.counters().byRule.get('try')).toMatchObject({ denied: 0, shadowRejected: 1 })
  })

  it('a deny list wins over every allow list, in the rules or the options', () => {
    const limiter = createLimiter({
      rules: [
        { id: 'a', limit: 5, window: '1m', allow: { ips: ['10.0.0.0/8'] } },
        { id: 'b', limit: 5, window: '1m', deny: { ips: ['10.6.6.0/24'] } },
      ],
      allow: { ips: ['10.0.0.0/8'] },
    })
    expect(limiter.check(at('10.6.6.6'))).toMatchObject({ status: 403, reason: 'deny-list' })
    expect(limiter.check(at('10.1.1.1'))).toMatchObject({ allowed: true, reason: 'allow-list' })
  })

  it('a rule set with a bad list is refused whole: the rules in force stay', () => {
    const good: RuleInput[] = [{ id: 'api', limit: 1, window: '1m', deny: { ips: ['192.0.2.1'] } }]
    const limiter = createLimiter({ rules: good })
    expect(() =>
      limiter.updateRules([{ id: 'api', limit: 1, window: '1m', deny: { ips: ['192.0.2.0/40'] } }]),
    ).toThrow(RulesValidationError)
    expect(() =>
      limiter.updateRules([{ id: 'api', limit: 1, window: '1m', deny: { ips: ['192.0.2.0/40'] } }]),
    ).toThrow(/rules\[0\]\.deny\.ips\[0\]: expected a prefix length from 0 to 32/)
    // A key part whose builder is not registered: refused when the set is installed.
    expect(() =>
      limiter.updateRules([
        { id: 'api', limit: 1, window: '1m', deny: { keys: { 'custom:tenant': ['t1'] } } },
      ]),
    ).toThrow(FloodgateError)
    expect(limiter.rules[0]!.deny!.ips).toEqual(['192.0.2.1'])
    expect(limiter.check(at('192.0.2.1'))).toMatchObject({ status: 403 })
  })

  it('a rules file whose new list is bad keeps the rules in force', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'floodgate-lists-'))
    try {
      const path = join(dir, 'rules.json')
      const rules = (ips: string[]) =>
        JSON.stringify([{ id: 'api', limit: 5, window: '1m', deny: { ips } }])
      await writeFile(path, rules(['192.0.2.1']))
      const logger = spyLogger()
      const source = fileRules(path, { watch: false, logger })
      const limiter = createLimiter({ rules: source, logger })
      await limiter.ready
      expect(limiter.check(at('192.0.2.1'))).toMatchObject({ status: 403 })
      await writeFile(path, rules(['2001:db8::/200']))
      await source.reload()
      expect(logger.warn).toHaveBeenCalled()
      expect(String(logger.warn.mock.calls.at(-1)![0].err)).toMatch(
        /deny\.ips\[0\]: expected a prefix length from 0 to 128/,
      )
      expect(limiter.check(at('192.0.2.1'))).toMatchObject({ status: 403 })
      await limiter.close()
    } finally {
      await rm(dir, { recursive: true, force: true })
    }
  })
})
