import { mkdtemp, rm } from 'node:fs/promises'
import { request } from 'node:http'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest'
import type { Logger } from '../logger.js'

/**
 * Starts an app whose `GET /` answers 200 behind the adapter's
 * `rateLimit([{ id: 'per-ip', limit: 1, window: '1m' }], { logger })`, with the framework's
 * default proxy setting, listening on the Unix socket `socketPath`.
 */
export type UnixSocketServe = (
  socketPath: string,
  logger: Logger,
) => Promise<{ close(): Promise<void> }>

function get(socketPath: string, headers: Record<string, string>): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = request({ socketPath, path: '/', headers }, (res) => {
      res.resume()
      res.on('end', () => resolve(res.statusCode ?? 0))
    })
    req.on('error', reject)
    req.end()
  })
}

/**
 * Through a real Unix socket: requests without a client address are keyed alike, so a rule
 * keyed by `ip` puts every one of them in one bucket; the adapter says so, once
 * (`FG_WRN_KEY_MISSING`), rather than silently.
 *
 * @param adapter - shown in the suite name
 * @param serve - starts the adapter's app on a Unix socket
 */
export function describeMissingAddressWarning(adapter: string, serve: UnixSocketServe): void {
  describe(`${adapter}: a request with no client address`, () => {
    const warn = vi.fn<(obj: object, msg?: string) => void>()
    const logger: Logger = { debug: vi.fn(), info: vi.fn(), warn, error: vi.fn() }
    let dir: string | undefined
    let app: { close(): Promise<void> } | undefined
    let socketPath = ''
    beforeAll(async () => {
      dir = await mkdtemp(join(tmpdir(), 'floodgate-socket-'))
      socketPath = join(dir, 'app.sock')
      app = await serve(socketPath, logger)
    })
    afterAll(async () => {
      await app?.close()
      if (dir !== undefined) await rm(dir, { recursive: true, force: true })
    })

    it('warns once that such requests share one bucket', async () => {
      // Two clients a proxy told apart only in a header the app does not trust.
      expect(await get(socketPath, { 'x-real-ip': '192.0.2.1' })).toBe(200)
      expect(await get(socketPath, { 'x-real-ip': '192.0.2.2' })).toBe(429)
      const missing = warn.mock.calls.filter(
        (c) => (c[0] as { code?: string }).code === 'FG_WRN_KEY_MISSING',
      )
      expect(missing).toHaveLength(1)
      expect(missing[0]![1]).toMatch(/no client address.*one shared bucket/)
    })
  })
}
