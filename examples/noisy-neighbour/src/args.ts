import { parseArgs } from 'node:util'
import type { Framework } from './host.js'

/** Parsed command line of the demo. */
export interface DemoArgs {
  /** Which scenarios run: both by default. */
  readonly scenario: Scenario
  /** Length of each run; undefined: each scenario's own (10 s and 8 s). */
  readonly durationMs: number | undefined
  readonly framework: Framework
  readonly store: 'memory' | 'redis'
  readonly redisUrl: string | undefined
  readonly hosts: number
  readonly rules: 'service' | 'static'
  readonly reportDir: string | undefined
  readonly help: boolean
}

/** The demo's scenarios: `all` runs both, noisy-neighbour first. */
export type Scenario = 'all' | 'noisy-neighbour' | 'slowdown'

export const USAGE = `Usage: pnpm demo [-- options]

  --scenario <name>    all (default) | noisy-neighbour (2 runs) | slowdown (3 runs)
  --duration <time>    length of each run: 5000ms, 5s, 30 (default: 10s noisy-neighbour,
                       8s slowdown)
  --framework <name>   express (default) | fastify | koa
  --store <name>       memory (default) | redis (needs REDIS_URL)
  --hosts <n>          app processes behind a round-robin proxy (default 1)
  --rules <from>       service (default: the rules service on PGlite) | static
  --report-dir <dir>   where the HTML report goes (default examples/noisy-neighbour/reports)
  --help               this text`

function durationMs(text: string): number {
  const m = /^(\d+(?:\.\d+)?)(ms|s)?$/.exec(text.trim())
  if (!m) throw new Error(`--duration: expected a time like 10s or 5000ms, got '${text}'`)
  const ms = m[2] === 'ms' ? Number(m[1]) : Number(m[1]) * 1000
  if (ms < 1000 || ms > 300_000) {
    throw new Error(`--duration: expected 1s to 300s, got '${text}'`)
  }
  return ms
}

/**
 * Parses the demo's command line.
 *
 * @param argv - arguments after the script name
 * @param env - environment (REDIS_URL)
 * @returns the options
 * @throws Error naming the bad option
 */
export function parseDemoArgs(argv: readonly string[], env: NodeJS.ProcessEnv): DemoArgs {
  const { values } = parseArgs({
    args: argv.filter((a) => a !== '--'),
    options: {
      scenario: { type: 'string', default: 'all' },
      duration: { type: 'string' },
      framework: { type: 'string', default: 'express' },
      store: { type: 'string', default: 'memory' },
      hosts: { type: 'string', default: '1' },
      rules: { type: 'string', default: 'service' },
      'report-dir': { type: 'string' },
      help: { type: 'boolean', default: false },
    },
    strict: true,
  })
  const scenario = values.scenario
  if (scenario !== 'all' && scenario !== 'noisy-neighbour' && scenario !== 'slowdown') {
    throw new Error(`--scenario: expected all, noisy-neighbour or slowdown, got '${scenario}'`)
  }
  const framework = values.framework
  if (framework !== 'express' && framework !== 'fastify' && framework !== 'koa') {
    throw new Error(`--framework: expected express, fastify or koa, got '${framework}'`)
  }
  const store = values.store
  if (store !== 'memory' && store !== 'redis') {
    throw new Error(`--store: expected memory or redis, got '${store}'`)
  }
  if (store === 'redis' && !env['REDIS_URL']) {
    throw new Error('--store redis: set REDIS_URL (e.g. REDIS_URL=redis://127.0.0.1:6379)')
  }
  const hosts = Number(values.hosts)
  if (!Number.isInteger(hosts) || hosts < 1 || hosts > 16) {
    throw new Error(`--hosts: expected an integer from 1 to 16, got '${values.hosts}'`)
  }
  const rules = values.rules
  if (rules !== 'service' && rules !== 'static') {
    throw new Error(`--rules: expected service or static, got '${rules}'`)
  }
  return {
    scenario,
    durationMs: values.duration === undefined ? undefined : durationMs(values.duration),
    framework,
    store,
    redisUrl: store === 'redis' ? env['REDIS_URL'] : undefined,
    hosts,
    rules,
    reportDir: values['report-dir'],
    help: values.help,
  }
}
