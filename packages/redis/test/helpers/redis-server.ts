import { spawn, spawnSync, type ChildProcess } from 'node:child_process'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import net from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Redis } from 'ioredis'

/** Whether `redis-server` and `redis-cli` are on the PATH. */
export function redisBinariesAvailable(): boolean {
  const probe = spawnSync('redis-server', ['--version'])
  const cli = spawnSync('redis-cli', ['--version'])
  return probe.status === 0 && cli.status === 0
}

/** Ports this process already handed out: a server may not have bound its port yet. */
const handedOut = new Set<number>()

/**
 * A free loopback TCP port (bound then released): any the system picks, or one of
 * `FG_TEST_PORTS` (`7300-7399`) when set, for machines where each test run owns a range.
 * Never one this process handed out before, so the nodes of one cluster, started together,
 * never draw the same port.
 */
export async function freePort(): Promise<number> {
  const range = /^(\d+)-(\d+)$/.exec(process.env.FG_TEST_PORTS ?? '')
  if (!range) {
    for (;;) {
      const port = await bindable(0)
      if (!handedOut.has(port)) return handOut(port)
    }
  }
  const [low, high] = [Number(range[1]), Number(range[2])]
  const start = low + Math.floor(Math.random() * (high - low + 1))
  for (let i = 0; i <= high - low; i++) {
    const port = low + ((start - low + i) % (high - low + 1))
    if (handedOut.has(port)) continue
    try {
      return handOut(await bindable(port))
    } catch {
      // taken: try the next one
    }
  }
  throw new Error(`no free port in FG_TEST_PORTS ${process.env.FG_TEST_PORTS}`)
}

function handOut(port: number): number {
  handedOut.add(port)
  return port
}

/** Bind `port` (0: any) on loopback, release it, and return the port bound. */
async function bindable(port: number): Promise<number> {
  const server = net.createServer()
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject)
    server.listen(port, '127.0.0.1', resolve)
  })
  const bound = (server.address() as net.AddressInfo).port
  await new Promise<void>((resolve) => server.close(() => resolve()))
  return bound
}

/**
 * A redis-server the test owns: loopback only, no persistence (a restart comes back empty),
 * killed with SIGKILL to simulate a crash.
 */
export class RedisServer {
  private proc: ChildProcess | undefined
  private readonly dir: string

  /** The redis.conf the server starts from, when it was given one. */
  private readonly configFile: string | undefined

  /**
   * @param port - Loopback port to serve on.
   * @param extraArgs - redis-server arguments (`--name value`) after the test defaults.
   * @param config - Lines of a redis.conf to start from (what only a config file can say,
   *   such as `rename-command EVALSHA ""`); the arguments override it.
   */
  constructor(
    readonly port: number,
    private extraArgs: string[] = [],
    config?: string,
  ) {
    this.dir = mkdtempSync(join(tmpdir(), 'fg-redis-'))
    if (config !== undefined) {
      this.configFile = join(this.dir, 'redis.conf')
      writeFileSync(this.configFile, config)
    }
  }

  static async start(extraArgs: string[] = [], config?: string): Promise<RedisServer> {
    // Twice at most: another process may take the free port before redis-server binds it.
    for (let attempt = 1; ; attempt++) {
      const server = new RedisServer(await freePort(), extraArgs, config)
      try {
        await server.start()
        return server
      } catch (err) {
        await server.stop()
        if (attempt >= 2) throw err
      }
    }
  }

  get url(): string {
    return `redis://127.0.0.1:${this.port}`
  }

  async start(): Promise<void> {
    const proc = spawn(
      'redis-server',
      [
        // redis-server reads a config file only as its first argument.
        ...(this.configFile === undefined ? [] : [this.configFile]),
        '--port',
        String(this.port),
        '--bind',
        '127.0.0.1',
        '--save',
        '',
        '--appendonly',
        'no',
        '--dir',
        this.dir,
        ...this.extraArgs,
      ],
      { stdio: 'ignore' },
    )
    this.proc = proc
    // Another process may have bound the port since freePort released it: then this server
    // exits at once, and a PING could be answered by the other one.
    await waitForPing(this.port, proc)
  }

  /**
   * Crash (SIGKILL) and start again on the same port and directory, so with the RDB a SAVE
   * wrote; `moreArgs` are added to the arguments from now on (such as `--key-load-delay`).
   */
  async restart(moreArgs: string[] = []): Promise<void> {
    await this.kill()
    this.extraArgs.push(...moreArgs)
    await this.start()
  }

  /** SIGKILL: the process dies mid-flight, as a crashed Redis would. */
  async kill(): Promise<void> {
    const proc = this.proc
    if (!proc || proc.exitCode !== null) return
    const exited = new Promise<void>((resolve) => proc.once('exit', () => resolve()))
    proc.kill('SIGKILL')
    await exited
    this.proc = undefined
  }

  /** SIGSTOP / SIGCONT: the process hangs (connections stay open, nothing answers) or resumes. */
  signal(signal: 'SIGSTOP' | 'SIGCONT'): void {
    this.proc?.kill(signal)
  }

  async stop(): Promise<void> {
    this.signal('SIGCONT')
    await this.kill()
    rmSync(this.dir, { recursive: true, force: true })
  }
}

/**
 * Resolve once a Redis answers PING on the port (bounded: 5 s), LOADING included. With `owner`, only the
 * redis-server that process runs counts: its exit, or another server's answer, is an error.
 */
export async function waitForPing(port: number, owner?: ChildProcess): Promise<void> {
  const deadline = Date.now() + 5000
  for (;;) {
    if (owner && (owner.exitCode !== null || owner.signalCode !== null))
      throw new Error(`redis-server for port ${port} exited before answering: port taken?`)
    const c = new Redis(port, '127.0.0.1', {
      lazyConnect: true,
      retryStrategy: () => null,
      maxRetriesPerRequest: 0,
      enableOfflineQueue: false,
      // A Redis loading its dataset is up: it answers, LOADING to PING.
      enableReadyCheck: false,
    })
    c.on('error', () => {})
    let pid: string | undefined
    try {
      await c.connect()
      await c.ping().catch((err: unknown) => {
        if (!(err instanceof Error && err.message.startsWith('LOADING'))) throw err
      })
      if (!owner) return
      const info = await c.info('server').catch((err: unknown) => {
        // A config with `rename-command INFO ""`: the owner is still running, which is
        // what can be checked.
        if (err instanceof Error && /unknown command 'info'/i.test(err.message)) return undefined
        throw err
      })
      if (info === undefined) return
      pid = /process_id:(\d+)/.exec(info)?.[1]
    } catch (err) {
      if (Date.now() > deadline) throw err
      await new Promise((r) => setTimeout(r, 20))
      continue
    } finally {
      c.disconnect()
    }
    if (Number(pid) === owner.pid) return
    throw new Error(`port ${port} is served by another redis-server (pid ${pid})`)
  }
}
