import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { afterEach, describe, expect, it } from 'vitest'
import {
  createLimiter,
  httpRules,
  parseRules,
  type Decision,
  type Rule,
  type RulesSource,
} from '@floodgate/core'
import { type RequestFacts } from '@floodgate/core/http'

/** A source the test drives by hand. */
function manualSource() {
  let deliver: (rules: Rule[], revision?: string) => void = () => {}
  const source: RulesSource = {
    start(onRules) {
      deliver = onRules
      return Promise.resolve()
    },
    stop() {},
  }
  return { source, push: (rules: Rule[], revision?: string) => deliver(rules, revision) }
}

const now = 1_000_000
const facts: RequestFacts = { method: 'GET', path: '/api/x', ip: '10.0.0.1', headers: {} }

function allowed(d: Decision | Promise<Decision>): boolean {
  if (d instanceof Promise) throw new Error('MemoryStore answers synchronously')
  return d.allowed
}

describe('rules swaps through a source', () => {
  it('keep the state of unchanged rules and start changed ones fresh', async () => {
    const { source, push } = manualSource()
    const limiter = createLimiter({ rules: source, clock: () => now })
    await limiter.ready
    push(parseRules([{ id: 'api', limit: 2, window: '1m', algorithm: 'fixed-window' }]), 'r1')
    expect([
      allowed(limiter.check(facts)),
      allowed(limiter.check(facts)),
      allowed(limiter.check(facts)),
    ]).toEqual([true, true, false])

    // Same rule (a new description and match do not touch its state) plus a new one.
    push(
      parseRules([
        {
          id: 'api',
          limit: 2,
          window: '1m',
          algorithm: 'fixed-window',
          description: 'now documented',
          match: '/api/**',
        },
        { id: 'other', limit: 100, window: '1m' },
      ]),
      'r2',
    )
    expect(allowed(limiter.check(facts))).toBe(false)

    // A new limit is a new state: the client starts fresh.
    push(parseRules([{ id: 'api', limit: 3, window: '1m', algorithm: 'fixed-window' }]), 'r3')
    expect(allowed(limiter.check(facts))).toBe(true)
    await limiter.close()
  })
})

describe('httpRules feeding a limiter', () => {
  let server: Server | undefined

  afterEach(async () => {
    server?.closeAllConnections()
    await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()))
    server = undefined
  })

  it('keeps enforcing the last good rules when the service starts serving invalid ones', async () => {
    let body = JSON.stringify({
      service: 'api',
      revision: '1',
      rules: [{ id: 'api', limit: 1, window: '1m' }],
    })
    server = createServer((_req, res) => res.end(body))
    await new Promise<void>((resolve) => server!.listen(0, '127.0.0.1', resolve))
    const { port } = server.address() as AddressInfo
    const rules = httpRules(`http://127.0.0.1:${port}/v1/services/api/ruleset`, {
      intervalMs: 60_000,
    })
    const limiter = createLimiter({ rules, clock: () => now })
    await limiter.ready
    expect(limiter.rules.map((r) => r.id)).toEqual(['api'])
    expect(allowed(limiter.check(facts))).toBe(true)
    expect(allowed(limiter.check(facts))).toBe(false)

    body = JSON.stringify({
      service: 'api',
      revision: '2',
      rules: [{ id: 'api', limit: 0, window: '1m' }],
    })
    await rules.poll()
    expect(limiter.rules[0]!.limit).toBe(1)
    expect(allowed(limiter.check(facts))).toBe(false)
    await limiter.close()
  })
})
