import type { Server } from 'node:http'
import { afterEach } from 'vitest'
import type { RulesSource } from './rules-source.js'

/**
 * The loopback servers and sources of a test file, stopped and closed after each test: push
 * what a test starts onto the lists this returns.
 */
export function closedAfterEach(): { servers: Server[]; sources: RulesSource[] } {
  const servers: Server[] = []
  const sources: RulesSource[] = []
  afterEach(async () => {
    for (const s of sources.splice(0)) s.stop()
    for (const s of servers.splice(0)) {
      s.closeAllConnections()
      await new Promise((resolve) => s.close(resolve))
    }
  })
  return { servers, sources }
}
