import { once } from 'node:events'
import { createServer, type IncomingHttpHeaders } from 'node:http'
import { connect, type AddressInfo } from 'node:net'

/** A loopback server that tells which headers Node hands over for a request's header lines. */
export interface HeaderProbe {
  /**
   * Send `GET /` with these header lines (each ending in CRLF), byte for byte as latin1.
   *
   * @returns the headers Node handed the server, or undefined when it refused the request
   */
  send(lines: string): Promise<IncomingHttpHeaders | undefined>
  close(): Promise<void>
}

/** Start a {@link HeaderProbe} on a free loopback port. */
export async function headerProbe(): Promise<HeaderProbe> {
  let seen: IncomingHttpHeaders | undefined
  // Not testing/loopback.ts: core's layers keep testing/ to itself, and this file is no test.
  const server = createServer((req, res) => {
    seen = req.headers
    res.end()
  })
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  const { port } = server.address() as AddressInfo
  return {
    send: (lines) => {
      seen = undefined
      return new Promise((resolve) => {
        const socket = connect(port, '127.0.0.1', () => {
          socket.write(`GET / HTTP/1.1\r\nHost: x\r\n${lines}Connection: close\r\n\r\n`, 'latin1')
        })
        let data = ''
        socket.setEncoding('latin1')
        socket.on('data', (c: string) => (data += c))
        socket.on('error', () => {})
        socket.on('close', () => resolve(data.startsWith('HTTP/1.1 200') ? seen : undefined))
      })
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections()
        server.close(() => resolve())
      }),
  }
}
