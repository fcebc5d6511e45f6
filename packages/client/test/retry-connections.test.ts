import { once } from 'node:events'
import { createServer } from 'node:http'
import type { Server, ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { withRetry } from '@floodgate/client'

// A refusal with a body far larger than the socket buffers: until the client reads or cancels
// it, the server cannot finish writing, and the connection stays busy.
const BIG = Buffer.alloc(8 << 20, 0x61)

let server: Server
let base: string
const responses: ServerResponse[] = []

beforeAll(async () => {
  server = createServer((req, res) => {
    responses.push(res)
    res.writeHead(429, { 'retry-after': '0', 'content-type': 'text/plain' })
    res.end(BIG)
  })
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
})

afterAll(async () => {
  server.closeAllConnections()
  server.close()
  await once(server, 'close')
})

/**
 * Resolves once every refusal the server sent has been read whole or had its connection
 * closed by the client; a leaked body never gets there, and the deadline names the leak.
 */
function allReleased(deadlineMs: number): Promise<string> {
  const released = responses.map((res) =>
    res.writableFinished || res.destroyed
      ? Promise.resolve()
      : new Promise<void>((resolve) => {
          res.once('finish', resolve)
          res.once('close', resolve)
        }),
  )
  let timer: NodeJS.Timeout | undefined
  const deadline = new Promise<string>((resolve) => {
    timer = setTimeout(() => {
      const busy = responses.filter((r) => !r.writableFinished && !r.destroyed).length
      resolve(`${busy} of ${responses.length} refusals still hold their connection`)
    }, deadlineMs)
  })
  return Promise.race([Promise.all(released).then(() => 'all released'), deadline]).finally(() =>
    clearTimeout(timer),
  )
}

describe('the bodies of retried refusals over a real connection', () => {
  it('are cancelled even when onRetry throws, so no connection stays busy', async () => {
    responses.length = 0
    const api = withRetry(fetch, {
      sleep: () => Promise.resolve(),
      onRetry: () => {
        throw new Error('logging failed')
      },
    })
    for (let i = 0; i < 3; i++) {
      await expect(api(`${base}/a`)).rejects.toThrow('logging failed')
    }
    expect(responses).toHaveLength(3)
    // Not a speed limit: a cancelled body closes its connection at once; the deadline only
    // turns a leak (which never releases) into a failure with a message.
    expect(await allReleased(5_000)).toBe('all released')
  })

  it('are cancelled between attempts, and the last refusal is returned unread', async () => {
    responses.length = 0
    const api = withRetry(fetch, { sleep: () => Promise.resolve(), maxAttempts: 3 })
    const res = await api(`${base}/a`)
    expect(res.status).toBe(429)
    expect(responses).toHaveLength(3)
    expect((await res.arrayBuffer()).byteLength).toBe(BIG.length)
    expect(await allReleased(5_000)).toBe('all released')
  })
})
