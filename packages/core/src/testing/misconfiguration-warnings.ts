import { afterEach, describe, expect, it, vi } from 'vitest'
import type { ErrorCode } from '../errors.js'
import type { Logger } from '../logger.js'
import type { RuleInput } from '../rules/schema.js'
import type { LoopbackServer } from './loopback.js'

/** Which proxies the app trusts: none, every one (the client picks its own address), one hop. */
export type ProxyTrust = 'none' | 'every' | 'one'

/** The adapter options the warnings suite passes. */
export interface WarningsServeOptions {
  readonly warnings?: boolean
  readonly logger?: Logger
}

/**
 * Starts an app whose `GET /` answers 200 behind the adapter's `rateLimit(rules, options)`
 * (a `per-ip` rule, 100 a minute), trusting `trust` proxies the framework's way, on a loopback
 * port (see `listenOnLoopback`). The suite closes it after the case.
 */
export type WarningsServe = (
  trust: ProxyTrust,
  options?: WarningsServeOptions,
) => Promise<LoopbackServer>

/** What {@link describeMisconfigurationWarnings} needs of an adapter. */
export interface MisconfigurationWarningsOptions {
  readonly serve: WarningsServe
  /** The adapter's `rateLimit`, called with express-rate-limit's options to see what it warns. */
  readonly rateLimit: (rules: readonly RuleInput[], options: never) => unknown
  /** What the warning about X-Forwarded-For from an untrusted peer says in the framework's words. */
  readonly untrusted: RegExp
  /** The code and words of the warning for an app that trusts every proxy. */
  readonly trustsEveryProxy: { readonly code: ErrorCode; readonly message: RegExp }
  /**
   * The options of the limiter this adapter's users come from (koa-ratelimit for Koa), each
   * with what its warning must say to write instead, in the order given.
   */
  readonly peerOptions?: {
    readonly peer: string
    readonly options: Readonly<Record<string, unknown>>
    readonly hints: readonly RegExp[]
  }
}

/** The rules the apps of the suite are started with. */
const WARNINGS_RULES: readonly RuleInput[] = [{ id: 'per-ip', limit: 100, window: '1m' }]

/** Lines Floodgate wrote to stderr while `run` ran. */
async function stderrOf(run: () => unknown): Promise<string[]> {
  const lines: string[] = []
  const spy = vi.spyOn(process.stderr, 'write').mockImplementation((chunk: unknown) => {
    if (typeof chunk === 'string' && chunk.startsWith('floodgate: ')) lines.push(chunk)
    return true
  })
  try {
    await run()
  } finally {
    spy.mockRestore()
  }
  return lines
}

const forwarded = (ip: string): RequestInit => ({ headers: { 'x-forwarded-for': ip } })

/**
 * The misconfiguration warnings every adapter gives, on by default, to stderr: X-Forwarded-For
 * from a peer the app does not trust as a proxy, an app trusting every proxy (each once), the
 * options of express-rate-limit named with what to write instead; `warnings: false` silences
 * them all and a `logger` receives them instead of stderr.
 *
 * @param name - the adapter, for the test titles
 */
export function describeMisconfigurationWarnings(
  name: string,
  options: MisconfigurationWarningsOptions,
): void {
  const { rateLimit, untrusted, trustsEveryProxy } = options
  const servers: LoopbackServer[] = []
  const serve = async (trust: ProxyTrust, o?: WarningsServeOptions): Promise<string> => {
    const server = await options.serve(trust, o)
    servers.push(server)
    return server.url
  }
  const get = async (url: string, init?: RequestInit): Promise<void> => {
    await (await fetch(url, init)).arrayBuffer()
  }

  describe(`${name}: misconfiguration warnings, on by default, to stderr`, () => {
    afterEach(async () => {
      vi.restoreAllMocks()
      await Promise.all(servers.splice(0).map((server) => server.close()))
    })

    it('X-Forwarded-For from a peer not trusted as a proxy: FG_WRN_FORWARDED_UNTRUSTED, once', async () => {
      const url = await serve('none')
      const lines = await stderrOf(async () => {
        await get(url, forwarded('198.51.100.7'))
        await get(url, forwarded('198.51.100.8'))
      })
      expect(lines).toEqual([expect.stringMatching(untrusted)])
      expect(lines[0]).toMatch(/\(FG_WRN_FORWARDED_UNTRUSTED\)\n$/)
    })

    it(`trusting every proxy: ${trustsEveryProxy.code}, once; one trusted hop is quiet`, async () => {
      const every = await serve('every')
      const one = await serve('one')
      const lines = await stderrOf(async () => {
        await get(every)
        await get(every)
        await get(one, forwarded('198.51.100.7'))
      })
      expect(lines).toEqual([expect.stringMatching(trustsEveryProxy.message)])
      expect(lines[0]).toMatch(new RegExp(`\\(${trustsEveryProxy.code}\\)\\n$`))
    })

    it("names what to write instead of express-rate-limit's options", async () => {
      const lines = await stderrOf(() =>
        rateLimit(WARNINGS_RULES, {
          max: 5,
          windowMs: 60_000,
          message: 'slow down',
          standardHeaders: 'draft-7',
          legacyHeaders: false,
          keyGenerator: () => 'k',
          handler: () => {},
          skipSuccessfulRequests: true,
        } as never),
      )
      expect(lines).toHaveLength(8)
      expect(lines[0]).toMatch(/options\.max is not a Floodgate option.*; write a rule's limit/)
      expect(lines[1]).toMatch(/options\.windowMs .*; write a rule's window/)
      expect(lines.find((l) => l.includes('standardHeaders'))).toMatch(/write headers: 'draft-7'/)
      expect(lines.find((l) => l.includes('handler'))).toMatch(/write onRejected/)
      const legacy = await stderrOf(() =>
        rateLimit(WARNINGS_RULES, { legacyHeaders: true } as never),
      )
      expect(legacy).toEqual([
        expect.stringMatching(/options\.legacyHeaders .*; write headers: 'legacy' or 'both'/),
      ])
    })

    const peer = options.peerOptions
    if (peer) {
      it(`names what to write instead of ${peer.peer}'s options`, async () => {
        const lines = await stderrOf(() => rateLimit(WARNINGS_RULES, peer.options as never))
        expect(lines).toHaveLength(peer.hints.length)
        peer.hints.forEach((hint, i) => expect(lines[i]).toMatch(hint))
        for (const line of lines) expect(line).toMatch(/\(FG_WRN_OPTION_UNKNOWN\)\n$/)
      })
    }

    it('warnings: false turns every one off; a logger receives them instead of stderr', async () => {
      const quietEvery = await serve('every', { warnings: false })
      const quietNone = await serve('none', { warnings: false })
      const silent = await stderrOf(async () => {
        rateLimit(WARNINGS_RULES, { max: 5, warnings: false } as never)
        await get(quietEvery)
        await get(quietNone, forwarded('198.51.100.7'))
      })
      expect(silent).toEqual([])
      const warn = vi.fn()
      const logger = { debug: vi.fn(), info: vi.fn(), warn, error: vi.fn() }
      const logged = await serve('every', { logger })
      expect(await stderrOf(() => get(logged))).toEqual([])
      expect(warn).toHaveBeenCalledWith(
        expect.objectContaining({ code: trustsEveryProxy.code }),
        expect.stringMatching(trustsEveryProxy.message),
      )
    })
  })
}
