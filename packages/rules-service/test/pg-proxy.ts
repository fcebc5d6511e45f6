import { createServer, connect, type Server, type Socket } from 'node:net'

/**
 * A TCP proxy in front of the real PostgreSQL that can be cut (every connection dropped, new
 * ones refused, as when the server stops) and restored on the same port, for outage tests.
 */
export interface PgProxy {
  /** `postgres://` URL through the proxy. */
  readonly url: string
  /** Drop every connection and stop listening: connects are refused. */
  cut(): Promise<void>
  /** Listen again on the same port. */
  restore(): Promise<void>
  close(): Promise<void>
}

/**
 * @param databaseUrl - the real server's URL
 * @returns the proxy, listening
 */
export async function startPgProxy(databaseUrl: string): Promise<PgProxy> {
  const target = new URL(databaseUrl)
  const sockets = new Set<Socket>()
  const track = (s: Socket): void => {
    sockets.add(s)
    s.on('error', () => {})
    s.on('close', () => sockets.delete(s))
  }
  let server: Server | undefined
  let port = 0
  const listen = async (): Promise<void> => {
    const s = createServer((client) => {
      const upstream = connect(Number(target.port || 5432), target.hostname)
      track(client)
      track(upstream)
      client.pipe(upstream)
      upstream.pipe(client)
      client.on('close', () => upstream.destroy())
      upstream.on('close', () => client.destroy())
    })
    await new Promise<void>((resolve) => s.listen(port, '127.0.0.1', resolve))
    port = (s.address() as { port: number }).port
    server = s
  }
  const stop = async (): Promise<void> => {
    const s = server
    server = undefined
    for (const socket of sockets) socket.destroy()
    if (s !== undefined) await new Promise((resolve) => s.close(resolve))
  }
  await listen()
  const url = new URL(databaseUrl)
  url.hostname = '127.0.0.1'
  url.port = String(port)
  return { url: url.toString(), cut: stop, restore: listen, close: stop }
}
