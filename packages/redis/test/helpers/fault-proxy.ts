import net from 'node:net'

/** What the proxy does with traffic. */
export type FaultMode =
  /** Forward both ways. */
  | 'pass'
  /**
   * Accept, but move no bytes either way (a blackholed or frozen link). Bytes are held back,
   * not dropped, as TCP would: back in 'pass' they flow on.
   */
  | 'stall'
  /**
   * Forward commands to Redis, swallow its replies: the commands run, their answers are lost.
   * Leave it with {@link FaultProxy.resetAll} (a client would take later replies for the
   * swallowed ones).
   */
  | 'drop-replies'

/**
 * A small TCP proxy in front of Redis that can delay, stall or reset connections, because
 * `tc netem` is not available on these machines. Loopback only.
 */
export class FaultProxy {
  private server: net.Server
  private readonly sockets = new Set<net.Socket>()
  /** Connections {@link FaultProxy.blackholeOpen} took out of service; destroyed on close. */
  private readonly blackholed = new Set<net.Socket>()
  private mode: FaultMode = 'pass'
  private delayMs = 0
  port = 0

  private constructor(
    private readonly targetHost: string,
    private targetPort: number,
  ) {
    this.server = net.createServer((client) => this.accept(client))
  }

  /** Start a proxy on a free loopback port in front of `host:port`. */
  static async start(targetHost: string, targetPort: number): Promise<FaultProxy> {
    const proxy = new FaultProxy(targetHost, targetPort)
    await new Promise<void>((resolve) => proxy.server.listen(0, '127.0.0.1', resolve))
    proxy.port = (proxy.server.address() as net.AddressInfo).port
    return proxy
  }

  /** Forward normally, stall every connection, or swallow Redis's replies (see {@link FaultMode}). */
  setMode(mode: FaultMode): void {
    this.mode = mode
    for (const s of this.sockets) {
      if (mode === 'stall') s.pause()
      else s.resume()
    }
  }

  /** Delay every chunk, both ways, by `ms`. */
  setDelay(ms: number): void {
    this.delayMs = ms
  }

  /**
   * Blackhole the connections open now, for good (a NAT or firewall that forgot them: no
   * byte moves and no reset ever comes), while new connections pass.
   */
  blackholeOpen(): void {
    for (const s of this.sockets) {
      s.pause()
      s.removeAllListeners('data')
      this.sockets.delete(s)
      this.blackholed.add(s)
    }
  }

  /**
   * Send new connections to another port from now on (a DNS name or virtual IP moved after a
   * failover); connections open now stay with the old target.
   */
  retarget(port: number): void {
    this.targetPort = port
  }

  /** Reset (RST) every open connection. */
  resetAll(): void {
    for (const s of this.sockets) s.resetAndDestroy()
    this.sockets.clear()
  }

  async close(): Promise<void> {
    this.resetAll()
    for (const s of this.blackholed) s.destroy()
    this.blackholed.clear()
    await new Promise<void>((resolve) => this.server.close(() => resolve()))
  }

  private accept(client: net.Socket): void {
    const upstream = net.connect(this.targetPort, this.targetHost)
    this.sockets.add(client)
    this.sockets.add(upstream)
    const drop = (): void => {
      this.sockets.delete(client)
      this.sockets.delete(upstream)
      client.destroy()
      upstream.destroy()
    }
    client.on('error', drop).on('close', drop)
    upstream.on('error', drop).on('close', drop)
    const pipe = (from: net.Socket, to: net.Socket): void => {
      from.on('data', (chunk: Buffer) => {
        if (from === upstream && this.mode === 'drop-replies') return
        if (this.delayMs > 0) setTimeout(() => to.writable && to.write(chunk), this.delayMs)
        else to.write(chunk)
      })
    }
    if (this.mode === 'stall') {
      client.pause()
      upstream.pause()
    }
    pipe(client, upstream)
    pipe(upstream, client)
  }
}
