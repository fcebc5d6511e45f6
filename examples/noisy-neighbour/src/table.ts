import { UNITS_PER_SECOND } from './rules.js'
import type { DemoResult } from './run-demo.js'
import type { RunSummary } from './stats.js'

const pct = (x: number): string => `${(x * 100).toFixed(1)} %`
const ms = (x: number): string => `${Math.round(x)} ms`
const int = (x: number): string => String(x)

type Row = [label: string, without: string, withLimiter: string] | [section: string]

function rows(w: RunSummary, f: RunSummary, wellNames: readonly string[]): Row[] {
  const wellShare = (run: RunSummary): number =>
    wellNames.reduce((sum, name) => sum + (run.share[name] ?? 0), 0)
  const both = (label: string, get: (r: RunSummary) => string): Row => [label, get(w), get(f)]
  return [
    [`well-behaved clients (${wellNames.length}, steady load, retrying with @floodgate/client)`],
    both('  requests', (r) => int(r.well.requests)),
    both('  success rate', (r) => pct(r.well.successRate)),
    both('  p50 latency', (r) => ms(r.well.p50Ms)),
    both('  p99 latency', (r) => ms(r.well.p99Ms)),
    both('  retries', (r) => int(r.well.retries)),
    ['noisy neighbour (spiking far above its share)'],
    both('  sent', (r) => int(r.noisy.sent)),
    both('  not sent (400 already in flight)', (r) => int(r.noisy.skipped)),
    both('  admitted', (r) => int(r.noisy.admitted)),
    both('    of which queued first', (r) => int(r.noisy.queued)),
    both('  rejected (429)', (r) => int(r.noisy.rejected)),
    both('  failed (503 / timeout)', (r) => int(r.noisy.failed)),
    both(`  admitted units/s in the spike (share: ${UNITS_PER_SECOND})`, (r) =>
      r.noisy.spikeUnitsPerSecond.toFixed(1),
    ),
    ['database (4 connections) — share of busy time'],
    both(`  well-behaved, together`, (r) => pct(wellShare(r))),
    ...wellNames.map((name) => both(`    ${name}`, (r) => pct(r.share[name] ?? 0))),
    both('  noisy', (r) => pct(r.share['noisy'] ?? 0)),
    both('  queries timed out in the pool', (r) => int(r.pool.timeouts)),
    both('  longest wait for a connection', (r) => ms(r.pool.maxWaitMs)),
  ]
}

/**
 * The side-by-side table the demo prints.
 *
 * @param result - both runs
 * @returns the table as text
 */
export function formatTable(result: DemoResult): string {
  const wellNames = Object.keys(result.with.perClient)
    .filter((c) => c !== 'noisy')
    .sort()
  const all = rows(result.without, result.with, wellNames)
  const header: Row = ['', result.without.label, result.with.label]
  const width = [
    Math.max(...all.map((r) => (r.length === 3 ? r[0].length : 0)), 10),
    Math.max(header[1].length, ...all.map((r) => r[1]?.length ?? 0)),
    Math.max(header[2].length, ...all.map((r) => r[2]?.length ?? 0)),
  ]
  const line = (r: Row): string =>
    r.length === 1
      ? r[0]
      : `${r[0].padEnd(width[0]!)}   ${r[1].padStart(width[1]!)}   ${r[2].padStart(width[2]!)}`
  const rule = '─'.repeat(width[0]! + width[1]! + width[2]! + 6)
  return [line(header), rule, ...all.map(line), rule].join('\n')
}
