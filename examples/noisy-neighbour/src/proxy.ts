import { once } from 'node:events'
import { createServer, request } from 'node:http'
import type { Agent } from 'node:http'
import type { AddressInfo } from 'node:net'
import { Agent as HttpAgent } from 'node:http'

/** A running round-robin proxy. */
export interface RunningProxy {
  readonly url: string
  close(): Promise<void>
}

/**
 * A minimal HTTP round-robin proxy on 127.0.0.1: each request goes to the next host in turn,
 * like a load balancer in front of a fleet. Enough for the demo's GETs; not for production.
 *
 * @param targets - base URLs of the app hosts
 * @returns the proxy's URL and `close()`
 */
export async function startProxy(targets: readonly string[]): Promise<RunningProxy> {
  const agent: Agent = new HttpAgent({ keepAlive: true, maxSockets: 256 })
  let next = 0
  const server = createServer((req, res) => {
    const target = new URL(targets[next++ % targets.length]!)
    const upstream = request(
      {
        host: target.hostname,
        port: target.port,
        method: req.method,
        path: req.url,
        headers: req.headers,
        agent,
      },
      (up) => {
        res.writeHead(up.statusCode ?? 502, up.headers)
        up.pipe(res)
      },
    )
    upstream.on('error', () => {
      if (!res.headersSent) res.writeHead(502)
      res.end()
    })
    // A client that gave up must not leave the upstream request running.
    res.on('close', () => {
      if (!res.writableFinished) upstream.destroy()
    })
    req.pipe(upstream)
  })
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: async () => {
      const closed = once(server, 'close')
      server.close()
      server.closeAllConnections()
      agent.destroy()
      await closed
    },
  }
}
