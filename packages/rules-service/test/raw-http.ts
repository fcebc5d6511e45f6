import { connect } from 'node:net'

/** A response as the bytes on the wire said it. */
export interface RawResponse {
  status: number
  headers: Record<string, string>
  body: string
}

/**
 * Send bytes to a loopback server and read until it closes the connection (or `timeoutMs`), so
 * requests Node's HTTP parser refuses, which no HTTP client will send, can be tested too.
 *
 * @param port - the server's port on 127.0.0.1
 * @param request - the whole request, `Connection: close` included
 * @param timeoutMs - bound on the wait
 * @returns the parsed response
 */
export function rawRequest(
  port: number,
  request: string,
  timeoutMs = 10_000,
): Promise<RawResponse> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1', () => socket.end(request))
    const chunks: Buffer[] = []
    const timer = setTimeout(() => {
      socket.destroy()
      reject(new Error(`no complete answer within ${timeoutMs} ms to ${request.slice(0, 80)}`))
    }, timeoutMs)
    socket.on('data', (chunk: Buffer) => chunks.push(chunk))
    socket.on('error', () => {})
    socket.on('close', () => {
      clearTimeout(timer)
      const text = Buffer.concat(chunks).toString('utf8')
      const split = text.indexOf('\r\n\r\n')
      const head = (split < 0 ? text : text.slice(0, split)).split('\r\n')
      const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(head[0] ?? '')?.[1])
      if (!Number.isInteger(status)) {
        reject(new Error(`not an HTTP response: ${JSON.stringify(text.slice(0, 200))}`))
        return
      }
      const headers: Record<string, string> = {}
      for (const line of head.slice(1)) {
        const colon = line.indexOf(':')
        if (colon > 0) headers[line.slice(0, colon).toLowerCase()] = line.slice(colon + 1).trim()
      }
      let body = split < 0 ? '' : text.slice(split + 4)
      if (headers['transfer-encoding'] === 'chunked') body = unchunk(body)
      resolve({ status, headers, body })
    })
  })
}

function unchunk(body: string): string {
  let out = ''
  let rest = body
  for (;;) {
    const end = rest.indexOf('\r\n')
    const size = parseInt(rest.slice(0, end), 16)
    if (!(size > 0)) return out
    out += rest.slice(end + 2, end + 2 + size)
    rest = rest.slice(end + 2 + size + 2)
  }
}
