import { describe, expect, it } from 'vitest'
import type { HostReport, ReportCounts } from './fleet-report-body.js'
import { FleetReports } from './fleet-reports.js'

const counts = (partial: Partial<ReportCounts>): ReportCounts => ({
  allowed: 0,
  queued: 0,
  rejected: 0,
  dropped: 0,
  shadowRejected: 0,
  failedOpen: 0,
  ...partial,
})

const report = (
  host: string,
  intervalMs: number,
  rules: { id: string; counts?: Partial<ReportCounts>; top?: [string, number][] }[],
): HostReport => ({
  host,
  intervalMs,
  rules: rules.map((r) => ({
    id: r.id,
    counts: counts(r.counts ?? {}),
    top: (r.top ?? []).map(([client, count]) => ({ client, count })),
  })),
})

function fleetAt(start: number, options: ConstructorParameters<typeof FleetReports>[0] = {}) {
  let now = start
  const fleet = new FleetReports({ bucketMs: 10_000, buckets: 6, ...options, now: () => now })
  return { fleet, advance: (ms: number) => (now += ms), at: (t: number) => (now = t) }
}

describe('FleetReports', () => {
  it('sums hosts into per-second rates per bucket and totals', () => {
    const { fleet, at } = fleetAt(100_000)
    // Both hosts report 10 s of decisions ending at 110 000: exactly bucket [100 000, 110 000).
    at(110_000)
    fleet.add('api', report('a', 10_000, [{ id: 'r', counts: { allowed: 50, rejected: 10 } }]))
    fleet.add('api', report('b', 10_000, [{ id: 'r', counts: { allowed: 30, queued: 4 } }]))
    at(120_000)
    const view = fleet.view('api')
    expect(view.times).toEqual([70_000, 80_000, 90_000, 100_000, 110_000])
    const [rule] = view.rules
    expect(rule?.id).toBe('r')
    expect(rule?.totals).toMatchObject({ allowed: 80, rejected: 10, queued: 4 })
    expect(rule?.perSecond.allowed).toEqual([0, 0, 0, 8, 0])
    expect(rule?.perSecond.rejected).toEqual([0, 0, 0, 1, 0])
    expect(view.hostCount).toBe(2)
  })

  it('spreads a report over the buckets its interval covers', () => {
    const { fleet, at } = fleetAt(0)
    at(125_000)
    // 20 s ending at 125 000: 5 s in [100k,110k), 10 s in [110k,120k), 5 s in [120k,130k).
    fleet.add('api', report('a', 20_000, [{ id: 'r', counts: { rejected: 40 } }]))
    at(130_000)
    const rule = fleet.view('api').rules[0]!
    expect(rule.perSecond.rejected.slice(-3)).toEqual([1, 2, 1])
    expect(rule.totals.rejected).toBe(40)
  })

  it('leaves the bucket still filling out of the rates but not out of the totals', () => {
    const { fleet, at } = fleetAt(0)
    at(105_000)
    fleet.add('api', report('a', 5000, [{ id: 'r', counts: { allowed: 10 } }]))
    const view = fleet.view('api')
    expect(view.times.at(-1)).toBe(90_000)
    expect(view.rules[0]?.perSecond.allowed.every((v) => v === 0)).toBe(true)
    expect(view.rules[0]?.totals.allowed).toBe(10)
  })

  it('merges the top clients of every host, heaviest first', () => {
    const { fleet, at } = fleetAt(0)
    at(50_000)
    fleet.add(
      'api',
      report('a', 10_000, [
        {
          id: 'r',
          top: [
            ['sha256:aa', 5],
            ['sha256:bb', 2],
          ],
        },
      ]),
    )
    fleet.add('api', report('b', 10_000, [{ id: 'r', top: [['sha256:bb', 7]] }]))
    at(61_000)
    fleet.add('api', report('a', 11_000, [{ id: 'r', top: [['sha256:aa', 1]] }]))
    expect(fleet.view('api').rules[0]?.top).toEqual([
      { client: 'sha256:bb', count: 9 },
      { client: 'sha256:aa', count: 6 },
    ])
  })

  it('forgets buckets older than the history, and then the service', () => {
    const { fleet, at } = fleetAt(0)
    at(100_000)
    fleet.add('api', report('a', 10_000, [{ id: 'r', counts: { allowed: 10 }, top: [['k', 1]] }]))
    expect(fleet.size.buckets).toBe(2)
    // Six 10 s buckets of history: 60 s later, nothing of that report is left.
    at(170_000)
    const view = fleet.view('api')
    expect(view.rules).toEqual([])
    expect(view.hostCount).toBe(0)
    expect(fleet.size).toEqual({ services: 0, hosts: 0, buckets: 0, rules: 0 })
  })

  it('stops listing a silent host after three of its intervals (30 s at least)', () => {
    const { fleet, at } = fleetAt(0)
    at(10_000)
    fleet.add('api', report('fast', 1000, []))
    fleet.add('api', report('slow', 20_000, []))
    at(39_999)
    expect(fleet.view('api').hosts.map((h) => h.host)).toEqual(['slow', 'fast'])
    at(40_000)
    expect(fleet.view('api').hosts.map((h) => h.host)).toEqual(['slow'])
    at(70_000)
    expect(fleet.view('api').hostCount).toBe(0)
  })

  it('holds at most maxHosts hosts per service however many ids report', () => {
    const { fleet, at } = fleetAt(0, { maxHosts: 100 })
    at(10_000)
    for (let i = 0; i < 5000; i++) {
      fleet.add('api', report(`host-${i}`, 10_000, [{ id: 'r', counts: { allowed: 1 } }]))
    }
    expect(fleet.size.hosts).toBe(100)
    const view = fleet.view('api')
    expect(view.hostCount).toBe(100)
    // The most recent stay; their counts and those of the displaced ones all remain.
    expect(view.hosts[0]?.host).toBe('host-4999')
    expect(view.rules[0]?.totals.allowed).toBe(5000)
  })

  it('holds at most maxRules rules per bucket and maxClients clients per rule', () => {
    const { fleet, at } = fleetAt(0, { maxRules: 3, maxClients: 4, buckets: 2 })
    at(15_000)
    const rules = Array.from({ length: 50 }, (_, i) => ({
      id: `rule-${i}`,
      counts: { rejected: 1 },
      top: Array.from({ length: 20 }, (_, c): [string, number] => [`c${i}-${c}`, c + 1]),
    }))
    for (let i = 0; i < 10; i++) fleet.add('api', report(`h${i}`, 1000, rules))
    expect(fleet.size.rules).toBeLessThanOrEqual(3)
    const view = fleet.view('api')
    expect(view.rules.map((r) => r.id)).toEqual(['rule-0', 'rule-1', 'rule-2'])
    expect(view.droppedRules).toBeGreaterThan(0)
    expect(view.rules[0]?.top.length).toBeLessThanOrEqual(4)
    // The heaviest client (count 20 from each of 10 hosts) is kept.
    expect(view.rules[0]?.top[0]).toMatchObject({ client: 'c0-19' })
  })

  it('keeps services apart', () => {
    const { fleet, at } = fleetAt(0)
    at(20_000)
    fleet.add('a', report('h', 10_000, [{ id: 'r', counts: { allowed: 1 } }]))
    expect(fleet.view('b').rules).toEqual([])
    expect(fleet.view('a').rules).toHaveLength(1)
  })

  it('refuses bad options by name', () => {
    expect(() => new FleetReports({ bucketMs: 0 })).toThrow(
      /fleet\.bucketMs: expected a positive integer, got 0/,
    )
    expect(() => new FleetReports({ maxHosts: 1.5 })).toThrow(/fleet\.maxHosts/)
  })
})
