import { mkdtempSync, rmSync } from 'node:fs'
import net from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { clientGone } from './client-gone.js'

const cleanups: Array<() => void> = []
afterEach(() => {
  for (const f of cleanups.splice(0)) f()
})

/** A server's side of one connection from a client of its own, unread: Node reads nothing. */
async function accepted(listen: (server: net.Server) => void, connect: () => net.Socket) {
  const server = net.createServer({ pauseOnConnect: true })
  const serverSide = new Promise<net.Socket>((resolve) =>
    server.once('connection', (s) => {
      s.on('error', () => {})
      resolve(s)
    }),
  )
  await new Promise<void>((resolve) => {
    server.once('listening', resolve)
    listen(server)
  })
  const client = connect()
  client.on('error', () => {})
  await new Promise((resolve) => client.once('connect', resolve))
  const socket = await serverSide
  cleanups.push(() => {
    client.destroy()
    socket.destroy()
    server.close()
  })
  return { client, socket, server }
}

const tcp = () => {
  let port = 0
  return accepted(
    (server) => {
      server.listen(0, '127.0.0.1', () => (port = (server.address() as net.AddressInfo).port))
    },
    () => net.connect(port, '127.0.0.1'),
  )
}

/** Resolves once `f()` holds, or fails after 2 s (the kernel answers within microseconds). */
async function until(f: () => boolean, what: string): Promise<void> {
  const deadline = Date.now() + 2_000
  while (!f()) {
    if (Date.now() > deadline) throw new Error(`${what}: not within 2 s`)
    await new Promise((resolve) => setTimeout(resolve, 5))
  }
}

describe('clientGone', () => {
  it('is false for a live TCP connection', async () => {
    const { socket } = await tcp()
    expect(clientGone(socket)).toBe(false)
  })

  it('is true once the socket is destroyed', async () => {
    const { socket } = await tcp()
    socket.destroy()
    expect(clientGone(socket)).toBe(true)
  })

  it('is true for a TCP connection whose peer reset it before Node read so', async () => {
    const { client, socket } = await tcp()
    client.resetAndDestroy()
    // Unread, the server's socket has not seen the reset: Node still holds it open, and only
    // the kernel knows the peer is gone.
    await until(() => clientGone(socket), 'the reset seen')
    expect(socket.destroyed).toBe(false)
    expect(socket.remoteAddress).toBeUndefined()
    expect(socket.localAddress).toBe('127.0.0.1')
  })

  it('is false once the address was read, even after the peer left (Node keeps it)', async () => {
    const { client, socket } = await tcp()
    expect(socket.remoteAddress).toBe('127.0.0.1')
    client.resetAndDestroy()
    await new Promise((resolve) => client.once('close', resolve))
    expect(clientGone(socket)).toBe(false)
  })

  it('is false for a live Unix socket connection, which has no address', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'floodgate-client-gone-'))
    cleanups.push(() => rmSync(dir, { recursive: true, force: true }))
    const path = join(dir, 'sock')
    const { socket } = await accepted(
      (server) => server.listen(path),
      () => net.connect(path),
    )
    expect(socket.remoteAddress).toBeUndefined()
    expect(clientGone(socket)).toBe(false)
  })

  it('is false without a socket', () => {
    expect(clientGone(undefined)).toBe(false)
    expect(clientGone(null)).toBe(false)
  })
})
