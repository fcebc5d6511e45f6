/**
 * Entry of one app host process in `--hosts N` mode. The parent passes the HostConfig as
 * JSON in argv[2], serves database queries over IPC, and asks for decision counts at the end.
 */
import { IpcDb } from './db.js'
import { startHost } from './host.js'
import type { HostConfig } from './host.js'

const config = JSON.parse(process.argv[2] ?? '{}') as HostConfig
const host = await startHost(config, new IpcDb())

process.on('message', (message: { type?: string }) => {
  if (message?.type === 'stats')
    process.send?.({ type: 'stats', decisions: host.decisions(), span: host.decisionSpan() })
  if (message?.type === 'close') {
    void host.close().finally(() => process.exit(0))
  }
})
// The parent going away (Ctrl-C, a crash) must not leave this process behind.
process.on('disconnect', () => process.exit(0))
process.send?.({ type: 'ready', url: host.url })
