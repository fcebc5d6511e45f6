import type { Server } from 'node:http'
import type { AddressInfo } from 'node:net'

/** A server listening on a free loopback port. */
export interface LoopbackServer {
  /** `http://127.0.0.1:<port>`. */
  readonly url: string
  readonly port: number
  /** Close the server, ending the connections still open (a request left hanging included). */
  close(): Promise<void>
}

/**
 * Start `server` on a free port of 127.0.0.1 and resolve once it listens: how the adapter tests
 * put a framework's app (`http.createServer(app)`, `createServer(app.callback())`) on a real
 * socket for the shared suites.
 */
export async function listenOnLoopback(server: Server): Promise<LoopbackServer> {
  server.listen(0, '127.0.0.1')
  await new Promise<void>((resolve, reject) => {
    server.once('listening', resolve)
    server.once('error', reject)
  })
  const { port } = server.address() as AddressInfo
  return {
    url: `http://127.0.0.1:${port}`,
    port,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections()
        server.close(() => resolve())
      }),
  }
}
