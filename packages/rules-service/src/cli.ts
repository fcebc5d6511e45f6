#!/usr/bin/env node
/**
 * @module floodgate-rules
 * `floodgate-rules serve`: run the rules service until SIGINT or SIGTERM.
 */
import { parseCli, USAGE } from './cli-options.js'
import { startRulesService } from './rules-service.js'

async function main(): Promise<void> {
  let parsed
  try {
    parsed = parseCli(process.argv.slice(2), process.env)
  } catch (err) {
    process.stderr.write(`floodgate-rules: ${(err as Error).message}\n\n${USAGE}`)
    process.exitCode = 2
    return
  }
  if (parsed.command === 'help') {
    process.stdout.write(USAGE)
    return
  }
  const service = await startRulesService(parsed.options)
  service.app.log.info(
    {
      url: service.url,
      admin: `${service.url}/admin/`,
      storage: parsed.options.databaseUrl ? 'postgres' : `pglite ${parsed.options.dataDir ?? ''}`,
    },
    'floodgate rules service listening',
  )
  let stopping = false
  const stop = (signal: string): void => {
    if (stopping) return
    stopping = true
    service.app.log.info({ signal }, 'stopping')
    service.stop().then(
      () => process.exit(0),
      (err: unknown) => {
        service.app.log.error({ err }, 'stop failed')
        process.exit(1)
      },
    )
  }
  process.once('SIGINT', () => stop('SIGINT'))
  process.once('SIGTERM', () => stop('SIGTERM'))
}

main().catch((err: unknown) => {
  process.stderr.write(`floodgate-rules: ${err instanceof Error ? err.message : String(err)}\n`)
  process.exit(1)
})
