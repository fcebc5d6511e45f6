import { Buffer } from 'node:buffer'
import { createHash } from 'node:crypto'
import { Command } from 'ioredis'
import type { RedisClient } from './connection.js'
import { isEvalOnly, refusesEvalsha, useEvalOnly } from './eval-only.js'

/** Binary bytes written straight into a command's frame as its last argument. */
export interface FrameTail {
  /** How many bytes {@link FrameTail.writeTo} writes. */
  readonly bytes: number
  /** Write them at `offset` of `target`. */
  writeTo(target: Buffer, offset: number): void
}

/** A text argument as RESP writes it, and its UTF-8 bytes beyond one per character. */
interface EncodedArgs {
  readonly text: string
  readonly wide: number
}

/** `$<bytes>\r\n<arg>\r\n` for each argument. */
function encodeArgs(args: readonly string[], from = 0): EncodedArgs {
  let text = ''
  let wide = 0
  for (let i = from; i < args.length; i++) {
    const a = args[i]!
    const n = Buffer.byteLength(a)
    wide += n - a.length
    text += `$${n}\r\n${a}\r\n`
  }
  return { text, wide }
}

/** A script, and the connections that have run it (so know its SHA). */
class LoadedScript {
  readonly sha: string
  /** `EVAL <script>` as RESP writes it. */
  readonly evalHead: EncodedArgs
  private readonly loaded = new WeakSet<object>()
  /** The connection last seen loaded: one Redis client has one, checked without a lookup. */
  private last: object | undefined
  /** The start of an EVALSHA frame (`*<count>`, EVALSHA, the SHA), by argument count. */
  private readonly evalshaHeads: string[] = []

  constructor(readonly lua: string) {
    this.sha = createHash('sha1').update(lua).digest('hex')
    this.evalHead = encodeArgs(['eval', lua])
  }

  /** The start of an EVALSHA frame of `count` elements. */
  evalshaHead(count: number): string {
    return (this.evalshaHeads[count] ??= `*${count}\r\n${encodeArgs(['evalsha', this.sha]).text}`)
  }

  /** Whether `socket` has run the script; if not, it is taken to from now on (EVAL loads it). */
  loadedOn(socket: object): boolean {
    if (socket === this.last) return true
    this.last = socket
    if (this.loaded.has(socket)) return true
    this.loaded.add(socket)
    return false
  }

  /** Redis answered NOSCRIPT on `socket` (restarted empty, SCRIPT FLUSH, failover). */
  forget(socket: object | undefined): void {
    if (socket === undefined) return
    this.loaded.delete(socket)
    if (socket === this.last) this.last = undefined
  }
}

/**
 * A script call whose last argument is binary. ioredis sends a command with a Buffer
 * argument in its buffer mode: every argument turned into a Buffer of its own, measured
 * twice and concatenated, at more Node instructions than the rest of a decision's own work.
 * This command writes its frame in one piece instead: the text part once, as UTF-8, and the
 * binary tail straight after it, in one buffer. What Redis receives is byte for byte what
 * ioredis would have sent: EVAL with the script on a connection that has not run it yet,
 * EVALSHA after (as ioredis does for a script defined with `defineCommand`).
 *
 * ioredis sees only the SHA, the key count and the keys as arguments (what it needs to route
 * the call on a Cluster and to apply a key prefix): the other arguments arrive already
 * written, and are the same on most calls.
 */
class TailedScriptCommand extends Command {
  /** The connection the command was last written to. */
  private socket: object | undefined
  /** This command's own reject (NOSCRIPT and refused EVALSHA), under a Cluster's redirections. */
  private readonly ownReject: (err: Error) => void
  /** Whether {@link TailedScriptCommand.failOnTryAgain} has run. */
  private tryAgainFails = false

  constructor(
    private readonly script: LoadedScript,
    args: string[],
    private readonly argv: EncodedArgs & { readonly count: number },
    private readonly tail: FrameTail,
    private readonly client: RedisClient,
    keyPrefix: string | undefined,
  ) {
    // The reply is binary (packed doubles): kept as a Buffer, not decoded as text. ioredis
    // copies a command's arguments with `args.flat()`, about 5k instructions for these three
    // or four strings (callgrind): they are flat already, so they are set after, with the key
    // prefix applied here as ioredis would (the keys follow the SHA and the key count).
    super('evalsha', [], { replyEncoding: null })
    if (keyPrefix !== undefined) for (let i = 2; i < args.length; i++) args[i] = keyPrefix + args[i]
    this.args = args
    // NOSCRIPT, or EVALSHA refused (renamed away, or not granted to the user): the script did
    // not run. Forget that the connection had it, or stop using EVALSHA on this client, and
    // send the same command once more, as EVAL; a second refusal is the call's answer, so a
    // Redis that keeps answering NOSCRIPT costs two calls, never a loop. Here rather than in a
    // `catch` on the promise: one closure, not a promise and a microtask turn more on every
    // call. (A Cluster wraps this reject once with its redirections, and sends the command
    // again as it is.)
    const reject = this.reject
    let resent = false
    this.reject = (err: Error) => {
      if (resent) return reject(err)
      if (err.message.includes('NOSCRIPT')) script.forget(this.socket)
      else if (refusesEvalsha(err)) useEvalOnly(client)
      else return reject(err)
      resent = true
      void client.sendCommand(this)
    }
    this.ownReject = this.reject
  }

  /**
   * A Cluster answers `TRYAGAIN` to a call of several keys of a slot being migrated when it
   * holds some of them but not all (or, importing, not all): the call did not run. ioredis
   * would send it again to a random node after `retryDelayOnTryAgain` (100 ms, past a limiter's
   * deadline), and again, for as long as the migration lasts: a call that runs after its
   * request passed unjudged. Here the call fails at once with `TRYAGAIN` instead, so the store
   * can decide its keys one call each (a call of one key is always served). The Cluster has
   * wrapped this command's reject by the time it is first written: wrapped once more, around
   * its redirections.
   */
  private failOnTryAgain(): void {
    if (this.tryAgainFails) return
    this.tryAgainFails = true
    const outer = this.reject
    if (outer === this.ownReject) return
    const own = this.ownReject
    this.reject = (err: Error) => (isTryAgain(err) ? own(err) : outer(err))
  }

  override toWritable(socket: object): Buffer {
    this.socket = socket
    this.failOnTryAgain()
    // SHA, key count, keys: strings (the constructor applied any key prefix to the keys).
    const args = this.args as string[]
    const { script, argv, tail } = this
    // Elements: the command's name, its arguments, the written ones, the tail.
    const count = args.length + argv.count + 2
    let head: string
    // UTF-8 bytes beyond one per character: every part but the arguments is ASCII.
    let wide = argv.wide
    if (!isEvalOnly(this.client) && script.loadedOn(socket)) head = script.evalshaHead(count)
    else {
      head = `*${count}\r\n${script.evalHead.text}`
      wide += script.evalHead.wide
    }
    const keys = encodeArgs(args, 1)
    head += keys.text
    wide += keys.wide
    head += argv.text
    head += `$${tail.bytes}\r\n`
    const at = head.length + wide
    const end = at + tail.bytes
    const frame = Buffer.allocUnsafe(end + 2)
    frame.write(head)
    tail.writeTo(frame, at)
    frame[end] = 13
    frame[end + 1] = 10
    return frame
  }
}

/**
 * A script run with keys, string arguments then one binary tail; resolves to its reply as
 * ioredis parsed it, bulk strings as Buffers (a well-behaved script's reply; a server can answer
 * anything). Pass the same `argv` array again when the arguments are the same: it is written
 * once.
 */
export type TailedScript = (
  keys: readonly string[],
  argv: readonly string[],
  tail: FrameTail,
) => Promise<unknown>

/**
 * A Lua script called with keys, string arguments and a binary last argument
 * ({@link TailedScriptCommand}): EVAL the first time on a connection, EVALSHA after. A
 * NOSCRIPT answer (a Redis that restarted empty, a SCRIPT FLUSH, a promoted replica) sends
 * the call once more, as EVAL: the script did not run, so nothing is counted twice. A client
 * whose Redis refuses EVALSHA (see `eval-only.ts`) sends EVAL on every call.
 *
 * @param client - The ioredis client or Cluster.
 * @param lua - The script.
 * @returns The caller.
 */
export function tailedScript(client: RedisClient, lua: string): TailedScript {
  const script = new LoadedScript(lua)
  const keyPrefix = (client.options as { keyPrefix?: string }).keyPrefix || undefined
  let lastArgv: readonly string[] | undefined
  let written: EncodedArgs & { readonly count: number } = { text: '', wide: 0, count: 0 }
  return (keys, argv, tail) => {
    if (argv !== lastArgv) {
      lastArgv = argv
      written = { ...encodeArgs(argv), count: argv.length }
    }
    const args = new Array<string>(2 + keys.length)
    args[0] = script.sha
    args[1] = String(keys.length)
    for (let i = 0; i < keys.length; i++) args[2 + i] = keys[i]!
    return client.sendCommand(
      new TailedScriptCommand(script, args, written, tail, client, keyPrefix),
    ) as Promise<unknown>
  }
}

/**
 * Whether Redis refused a call because its keys are split by a slot migration (`TRYAGAIN`):
 * the call did not run, so nothing it would have written was written.
 */
export function isTryAgain(err: unknown): boolean {
  return err instanceof Error && err.message.startsWith('TRYAGAIN')
}
