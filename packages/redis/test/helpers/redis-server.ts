import { spawn, spawnSync, type ChildProcess } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
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

/**
 * A free loopback TCP port (bound then released): any the system picks, or one of
 * `FG_TEST_PORTS` (`7300-7399`) when set, for machines where each test run owns a range.
 */
export async function freePort(): Promise<number> {
  const range = /^(\d+)-(\d+)$/.exec(process.env.FG_TEST_PORTS ?? '')
  if (!range) return bindable(0)
  const [low, high] = [Number(range[1]), Number(range[2])]
  const start = low + Math.floor(Math.random() * (high - low + 1))
  for (let i = 0; i <= high - low; i++) {
    const port = low + ((start - low + i) % (high - low + 1))
    try {
      return await bindable(port)
    } catch {
      // taken: try the next one
    }
  }
  throw new Error(`no free port in FG_TEST_PORTS ${process.env.FG_TEST_PORTS}`)
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

  constructor(
    readonly port: number,
    private readonly extraArgs: string[] = [],
  ) {
    this.dir = mkdtempSync(join(tmpdir(), 'fg-redis-'))
  }

  static async start(extraArgs: string[] = []): Promise<RedisServer> {
    // Twice at most: another process may take the free port before redis-server binds it.
    for (let attempt = 1; ; attempt++) {
      const server = new RedisServer(await freePort(), extraArgs)
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
    this.proc = spawn(
      'redis-server',
      [
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
    await waitForPing(this.port)
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

/** Resolve once a Redis answers PING on the port (bounded: 5 s). */
export async function waitForPing(port: number): Promise<void> {
  const deadline = Date.now() + 5000
  for (;;) {
    const c = new Redis(port, '127.0.0.1', {
      lazyConnect: true,
      retryStrategy: () => null,
      maxRetriesPerRequest: 0,
      enableOfflineQueue: false,
    })
    c.on('error', () => {})
    try {
      await c.connect()
      await c.ping()
      return
    } catch (err) {
      if (Date.now() > deadline) throw err
      await new Promise((r) => setTimeout(r, 20))
    } finally {
      c.disconnect()
    }
  }
}
