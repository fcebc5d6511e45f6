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
  /**
   * Drop the connection that next sends `COMMIT`: `before` it reaches the server (the
   * transaction is rolled back), or `after` the server has answered it (the transaction is
   * committed, but the client never hears so), or `after, then down`: that, and the proxy
   * stops listening as {@link PgProxy.cut} does. One-shot (undefined disarms it); other
   * connections are untouched.
   */
  cutAtNextCommit(when: CommitCut | undefined): void
  close(): Promise<void>
}

/** Where {@link PgProxy.cutAtNextCommit} cuts. */
export type CommitCut = 'before' | 'after' | 'after, then down'

// The simple-query message node-postgres sends for `client.query('COMMIT')`.
const COMMIT = Buffer.from('COMMIT\0')

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
  let commitCut: CommitCut | undefined
  const listen = async (): Promise<void> => {
    const s = createServer((client) => {
      const upstream = connect(Number(target.port || 5432), target.hostname)
      track(client)
      track(upstream)
      let committing = false
      let down = false
      const drop = (): void => {
        client.destroy()
        upstream.destroy()
      }
      client.on('data', (chunk: Buffer) => {
        if (commitCut !== undefined && chunk.includes(COMMIT)) {
          const when = commitCut
          commitCut = undefined
          if (when === 'before') return drop()
          committing = true
          if (when === 'after, then down') down = true
        }
        upstream.write(chunk)
      })
      // The server's answer to the COMMIT is never passed on: it committed, the client is cut.
      upstream.on('data', (chunk: Buffer) => {
        if (!committing) return client.write(chunk)
        drop()
        if (down) void stop()
      })
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
  return {
    url: url.toString(),
    cut: stop,
    restore: listen,
    cutAtNextCommit: (when) => (commitCut = when),
    close: stop,
  }
}
