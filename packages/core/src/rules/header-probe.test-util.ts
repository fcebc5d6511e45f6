import { createServer, type IncomingHttpHeaders } from 'node:http'
import { connect } from 'node:net'
import { listenOnLoopback } from '../testing/loopback.js'

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
  const server = await listenOnLoopback(
    createServer((req, res) => {
      seen = req.headers
      res.end()
    }),
  )
  return {
    send: (lines) => {
      seen = undefined
      return new Promise((resolve) => {
        const socket = connect(server.port, '127.0.0.1', () => {
          socket.write(`GET / HTTP/1.1\r\nHost: x\r\n${lines}Connection: close\r\n\r\n`, 'latin1')
        })
        let data = ''
        socket.setEncoding('latin1')
        socket.on('data', (c: string) => (data += c))
        socket.on('error', () => {})
        socket.on('close', () => resolve(data.startsWith('HTTP/1.1 200') ? seen : undefined))
      })
    },
    close: () => server.close(),
  }
}
