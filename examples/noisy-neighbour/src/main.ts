/**
 * `pnpm demo`: one noisy neighbour versus several well-behaved clients, run twice with the
 * same traffic — without a limiter, then behind Floodgate — then the slowdown scenario, run
 * three times — without a limiter, with the static rule, with the adaptive rule — with tables
 * and one HTML report.
 */
import { mkdir, writeFile } from 'node:fs/promises'
import { join, resolve } from 'node:path'
import { performance } from 'node:perf_hooks'
import { fileURLToPath } from 'node:url'
import { parseDemoArgs, USAGE } from './args.js'
import type { DemoArgs } from './args.js'
import { renderReport } from './report.js'
import type { DemoReport } from './report.js'
import { runDemo } from './run-demo.js'
import { runSlowdown } from './run-slowdown.js'
import { formatSlowdownTable } from './slowdown-table.js'
import { formatTable } from './table.js'

let args: DemoArgs
try {
  args = parseDemoArgs(process.argv.slice(2), process.env)
} catch (error) {
  console.error(`${(error as Error).message}\n\n${USAGE}`)
  process.exit(2)
}
if (args.help) {
  console.log(USAGE)
  process.exit(0)
}

const rulesService = args.rules === 'service' ? await startDemoRulesService() : undefined
const startedAt = performance.now()
try {
  const report: { -readonly [K in keyof DemoReport]: DemoReport[K] } = {}
  if (args.scenario !== 'slowdown') {
    const result = await runDemo({
      durationMs: args.durationMs,
      framework: args.framework,
      store: args.store,
      redisUrl: args.redisUrl,
      hosts: args.hosts,
      rulesUrl: rulesService?.url,
      log: (line) => console.log(line),
    })
    report.noisyNeighbour = result
    console.log(`\n${formatTable(result)}\n`)
    if (args.hosts > 1) {
      console.log(
        args.store === 'memory'
          ? `Each of the ${args.hosts} hosts limits alone (MemoryStore): the fleet admits up to ${args.hosts}× a client's share. --store redis shares one limit.\n`
          : `The ${args.hosts} hosts share one limit through Redis: the fleet admits one share per client.\n`,
      )
    }
  }
  if (args.scenario !== 'noisy-neighbour') {
    if (args.hosts > 1) {
      console.log('the slowdown scenario runs one host (an adaptive limit is per host)')
    }
    const result = await runSlowdown({
      durationMs: args.durationMs,
      framework: args.framework,
      store: args.store,
      redisUrl: args.redisUrl,
      rulesUrl: rulesService?.url,
      adaptiveRulesUrl: rulesService?.adaptiveUrl,
      log: (line) => console.log(line),
    })
    report.slowdown = result
    console.log(`\n${formatSlowdownTable(result)}\n`)
  }
  console.log(`the runs took ${((performance.now() - startedAt) / 1000).toFixed(1)} s`)
  const dir = resolve(args.reportDir ?? fileURLToPath(new URL('../reports', import.meta.url)))
  await mkdir(dir, { recursive: true })
  const file = join(dir, `noisy-neighbour-${new Date().toISOString().replace(/[:.]/g, '-')}.html`)
  await writeFile(file, renderReport(report))
  console.log(`HTML report: ${file}`)
} catch (error) {
  console.error(`the demo failed: ${(error as Error).message}`)
  process.exitCode = 1
} finally {
  await rulesService?.stop()
}

async function startDemoRulesService(): Promise<
  { url: string; adaptiveUrl: string; stop: () => Promise<void> } | undefined
> {
  // PGlite compiles its WebAssembly on the first start: several seconds, so say what it is.
  console.log('starting the rules service (PGlite, in memory)…')
  try {
    const { startRulesServiceWithDemoRules } = await import('./rules-from-service.js')
    const service = await startRulesServiceWithDemoRules()
    console.log(`rules service ready; the hosts poll ${service.url} for their rules`)
    return service
  } catch (error) {
    // The demo is about the limiter; without the rules service it still runs, on static rules.
    console.warn(
      `the rules service did not start (${(error as Error).message}); using the static rules`,
    )
    return undefined
  }
}
