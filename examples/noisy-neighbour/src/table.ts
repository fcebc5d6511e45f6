import { UNITS_PER_SECOND } from './rules.js'
import type { DemoResult } from './run-demo.js'
import type { RunSummary } from './stats.js'

export const pct = (x: number): string => `${(x * 100).toFixed(1)} %`
export const ms = (x: number): string => `${Math.round(x)} ms`
export const int = (x: number): string => String(x)

/** A line of a table: a label and one value per column, or a section heading alone. */
export type Row = readonly [label: string, ...values: string[]] | readonly [section: string]

/**
 * Lays out rows under a header: labels left, values right-aligned in their columns.
 *
 * @param header - the columns' names (the first, above the labels, usually empty)
 * @param all - the rows
 * @returns the table as text
 */
export function formatColumns(header: readonly string[], all: readonly Row[]): string {
  const width = header.map((h, i) =>
    Math.max(i === 0 ? 10 : h.length, ...all.map((r) => (r.length > 1 ? (r[i]?.length ?? 0) : 0))),
  )
  const line = (r: readonly string[]): string =>
    r.length === 1
      ? r[0]!
      : r
          .map((cell, i) => (i === 0 ? cell.padEnd(width[0]!) : cell.padStart(width[i]!)))
          .join('   ')
  const rule = '─'.repeat(width.reduce((a, b) => a + b, 0) + 3 * (width.length - 1))
  return [line(header), rule, ...all.map(line), rule].join('\n')
}

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
  return formatColumns(
    ['', result.without.label, result.with.label],
    rows(result.without, result.with, wellNames),
  )
}
