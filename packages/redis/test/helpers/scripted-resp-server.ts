import net from 'node:net'

/**
 * A server that speaks RESP and answers scripts whatever the test says: a hostile or broken
 * Redis, for what RedisStore must survive. The handshake commands ioredis sends (INFO for its
 * ready check, anything else) get harmless answers; EVAL and EVALSHA get `answer(args, name)`, raw
 * RESP (`args`: the command's arguments after its name, as latin1 strings).
 */
export class ScriptedRespServer {
  private readonly server: net.Server
  private readonly sockets = new Set<net.Socket>()
  /** Script calls answered so far. */
  scriptCalls = 0
  /** Answers still to be written (a late one holds back those after it). */
  unanswered = 0

  private constructor(private readonly answer: (args: string[], name: string) => Answer) {
    this.server = net.createServer((socket) => this.accept(socket))
  }

  static async start(
    answer: (args: string[], name: string) => Answer,
  ): Promise<ScriptedRespServer> {
    const s = new ScriptedRespServer(answer)
    await new Promise<void>((resolve) => s.server.listen(0, '127.0.0.1', resolve))
    return s
  }

  get url(): string {
    return `redis://127.0.0.1:${(this.server.address() as net.AddressInfo).port}`
  }

  private accept(socket: net.Socket): void {
    this.sockets.add(socket)
    socket.on('close', () => this.sockets.delete(socket))
    socket.on('error', () => socket.destroy())
    let pending = Buffer.alloc(0)
    // Answers leave in the order of their commands, a late one holding back those after it.
    let written = Promise.resolve()
    socket.on('data', (chunk: Buffer) => {
      pending = Buffer.concat([pending, chunk])
      for (;;) {
        const parsed = readCommand(pending)
        if (parsed === undefined) return
        pending = pending.subarray(parsed.used)
        const a = this.reply(parsed.args)
        const resp = Buffer.isBuffer(a) ? a : a.resp
        const afterMs = Buffer.isBuffer(a) ? 0 : a.afterMs
        this.unanswered++
        written = written
          .then(() => (afterMs > 0 ? new Promise((r) => setTimeout(r, afterMs)) : undefined))
          .then(() => {
            this.unanswered--
            if (!socket.destroyed) socket.write(resp)
          })
      }
    })
  }

  private reply(args: string[]): Answer {
    const name = (args[0] ?? '').toLowerCase()
    if (name === 'eval' || name === 'evalsha') {
      this.scriptCalls++
      return this.answer(args.slice(1), name)
    }
    if (name === 'info') return bulk('# Server\r\nredis_version:7.0.15\r\nloading:0\r\n')
    return Buffer.from('+OK\r\n')
  }

  async stop(): Promise<void> {
    for (const s of this.sockets) s.destroy()
    await new Promise<void>((resolve) => this.server.close(() => resolve()))
  }
}

/** Raw RESP to answer with, at once or `afterMs` later (a late answer; the ones after wait). */
export type Answer = Buffer | { readonly afterMs: number; readonly resp: Buffer }

/** A RESP bulk string. */
export function bulk(body: string | Buffer): Buffer {
  const b = typeof body === 'string' ? Buffer.from(body) : body
  return Buffer.concat([Buffer.from(`$${b.length}\r\n`), b, Buffer.from('\r\n')])
}

/** One command (an array of bulk strings) from the front of `buf`, or undefined if incomplete. */
function readCommand(buf: Buffer): { args: string[]; used: number } | undefined {
  const line = (from: number): { text: string; next: number } | undefined => {
    const eol = buf.indexOf('\r\n', from)
    return eol < 0 ? undefined : { text: buf.toString('latin1', from, eol), next: eol + 2 }
  }
  const head = line(0)
  if (head === undefined) return undefined
  if (!head.text.startsWith('*')) throw new Error(`not a RESP array: ${head.text}`)
  const count = Number(head.text.slice(1))
  const args: string[] = []
  let pos = head.next
  for (let i = 0; i < count; i++) {
    const len = line(pos)
    if (len === undefined) return undefined
    const n = Number(len.text.slice(1))
    if (buf.length < len.next + n + 2) return undefined
    args.push(buf.toString('latin1', len.next, len.next + n))
    pos = len.next + n + 2
  }
  return { args, used: pos }
}
