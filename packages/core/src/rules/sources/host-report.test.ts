import { describe, expect, it } from 'vitest'
import { zeroCounts, type DecisionCounts } from '../../limiter-counters.js'
import type { TopClient } from '../../limiter-top-clients.js'
import {
  checkHostReportOptions,
  HostReporter,
  reportUrlFor,
  type ReportingLimiter,
} from './host-report.js'

/** A limiter stand-in whose counters and top clients the test sets. */
function fakeLimiter() {
  const byRule = new Map<string, DecisionCounts>()
  const top = new Map<string, TopClient[]>()
  const limiter: ReportingLimiter = {
    counters: () => ({ total: zeroCounts(), byRule, inFlight: new Map() }),
    topClients: (id) => top.get(id) ?? [],
  }
  const set = (id: string, counts: Partial<DecisionCounts>, clients: [string, number][] = []) => {
    byRule.set(id, { ...zeroCounts(), ...counts })
    top.set(
      id,
      clients.map(([client, count]) => ({ client, count, error: 0 })),
    )
  }
  return { limiter, set, byRule }
}

function reporter(options: Parameters<typeof checkHostReportOptions>[0] = { host: 'h1' }) {
  let now = 1000
  const r = new HostReporter(checkHostReportOptions(options)!, () => now)
  return { r, advance: (ms: number) => (now += ms) }
}

const parse = (body: string | undefined) =>
  JSON.parse(body ?? 'null') as {
    host: string
    intervalMs: number
    rules: {
      id: string
      counts: Record<string, number>
      top: { client: string; count: number }[]
    }[]
  }

describe('HostReporter', () => {
  it('reports nothing before a limiter is attached', () => {
    expect(reporter().r.next()).toBeUndefined()
  })

  it('leaves out a client the service could not show, never the report', () => {
    // The service refuses a whole report for one client with a control character or past 256
    // characters; the client would be in every later report too.
    const { limiter, set } = fakeLimiter()
    const { r, advance } = reporter()
    r.attach(limiter)
    set('api', { rejected: 9 }, [
      ['\u0000ip:127.0.0.1', 5],
      ['a\tb', 2],
      ['x'.repeat(257), 1],
      ['\ud800', 1],
      ['ok\\u0000', 1],
    ])
    advance(1000)
    expect(parse(r.next()?.body).rules).toEqual([
      { id: 'api', counts: { rejected: 9 }, top: [{ client: 'ok\\u0000', count: 1 }] },
    ])
  })

  it('reports counts and clients since the last accepted report', () => {
    const { limiter, set } = fakeLimiter()
    const { r, advance } = reporter()
    r.attach(limiter)
    set('api', { allowed: 10, rejected: 2, denied: 1 }, [['sha256:a', 2]])
    advance(5000)
    const first = r.next()!
    expect(parse(first.body)).toEqual({
      host: 'h1',
      intervalMs: 5000,
      rules: [
        {
          id: 'api',
          counts: { allowed: 10, rejected: 2 },
          top: [{ client: 'sha256:a', count: 2 }],
        },
      ],
    })
    first.acknowledged()
    set('api', { allowed: 15, rejected: 5 }, [
      ['sha256:a', 4],
      ['sha256:b', 1],
    ])
    advance(2000)
    expect(parse(r.next()!.body)).toEqual({
      host: 'h1',
      intervalMs: 2000,
      rules: [
        {
          id: 'api',
          counts: { allowed: 5, rejected: 3 },
          top: [
            { client: 'sha256:a', count: 2 },
            { client: 'sha256:b', count: 1 },
          ],
        },
      ],
    })
  })

  it('sends again what a report that was not accepted carried', () => {
    const { limiter, set } = fakeLimiter()
    const { r, advance } = reporter()
    r.attach(limiter)
    set('api', { allowed: 3 })
    advance(1000)
    r.next() // lost: never acknowledged
    set('api', { allowed: 7 })
    advance(1000)
    const again = parse(r.next()!.body)
    expect(again.intervalMs).toBe(2000)
    expect(again.rules[0]?.counts).toEqual({ allowed: 7 })
  })

  it('leaves out rules with nothing new, and treats counters that went down as restarted', () => {
    const { limiter, set } = fakeLimiter()
    const { r } = reporter()
    r.attach(limiter)
    set('quiet', {})
    set('api', { allowed: 9 })
    r.next()!.acknowledged()
    expect(parse(r.next()!.body).rules).toEqual([])
    set('api', { allowed: 2 })
    expect(parse(r.next()!.body).rules[0]?.counts).toEqual({ allowed: 2 })
  })

  it('stays under maxBytes: clients of the least busy rules go first, then those rules, whose counts wait', () => {
    const { limiter, set } = fakeLimiter()
    const { r } = reporter({ host: 'h1', maxBytes: 1024 })
    r.attach(limiter)
    const clients = (p: string): [string, number][] =>
      Array.from({ length: 10 }, (_, i) => [`sha256:${p}${String(i).padStart(14, '0')}`, 1])
    for (let i = 0; i < 30; i++)
      set(`rule-${String(i).padStart(2, '0')}`, { allowed: 100 - i }, clients(`${i}`))
    const pending = r.next()!
    expect(Buffer.byteLength(pending.body)).toBeLessThanOrEqual(1024)
    const sent = parse(pending.body)
    expect(sent.rules[0]?.id).toBe('rule-00')
    expect(sent.rules.length).toBeLessThan(30)
    expect(sent.rules.at(-1)?.top).toEqual([])
    pending.acknowledged()
    // Rules that did not fit come next time, with their counts.
    const next = parse(r.next()!.body)
    expect(next.rules.map((x) => x.id)).not.toContain('rule-00')
    expect(next.rules.find((x) => x.id === 'rule-29')?.counts).toEqual({ allowed: 71 })
  })

  it('sends counts only when the limiter keeps no top clients', () => {
    const { r } = reporter()
    const byRule = new Map([['api', { ...zeroCounts(), rejected: 1 }]])
    r.attach({
      counters: () => ({ total: zeroCounts(), byRule, inFlight: new Map() }),
      topClients: () => {
        throw new Error('topClients: false')
      },
    })
    expect(parse(r.next()!.body).rules).toEqual([{ id: 'api', counts: { rejected: 1 }, top: [] }])
  })
})

describe('report options', () => {
  it('are off unless asked for, and checked by name', () => {
    expect(checkHostReportOptions(undefined)).toBeUndefined()
    expect(checkHostReportOptions(false)).toBeUndefined()
    expect(checkHostReportOptions(true)?.host).toMatch(/^[A-Za-z0-9][A-Za-z0-9._:@-]*-\d+$/)
    expect(() => checkHostReportOptions({ host: 'a b' })).toThrow(
      /httpRules: report\.host: expected 1-128 letters/,
    )
    expect(() => checkHostReportOptions({ topClients: 21 })).toThrow(
      /httpRules: report\.topClients: expected an integer from 0 to 20/,
    )
    expect(() => checkHostReportOptions({ maxBytes: 10 })).toThrow(/httpRules: report\.maxBytes/)
    expect(() => checkHostReportOptions({ url: 'nope' })).toThrow(/httpRules: report\.url/)
    expect(() => checkHostReportOptions({ hots: 'x' } as never)).toThrow(
      /httpRules: report\.hots: unknown setting/,
    )
  })

  it('send to the poll URL with its last segment replaced by report', () => {
    expect(reportUrlFor(new URL('http://r:8080/v1/services/api/ruleset?x=1')).href).toBe(
      'http://r:8080/v1/services/api/report?x=1',
    )
  })
})
