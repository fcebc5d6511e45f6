import { createServer } from 'node:http'
import { rateLimit, type KoaRateLimitOptions } from '@floodgate/koa'
import Koa from 'koa'
import request from 'supertest'
import { afterEach, describe, expect, it, vi } from 'vitest'

const RULES = [{ id: 'per-ip', limit: 100, window: '1m' }]

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

function serve(proxy: boolean, maxIpsCount: number, options: KoaRateLimitOptions = {}) {
  const app = new Koa()
  app.proxy = proxy
  app.maxIpsCount = maxIpsCount
  app.use(rateLimit(RULES, options))
  app.use((ctx) => {
    ctx.body = 'ok'
  })
  return request(createServer((req, res) => void app.callback()(req, res)))
}

describe('koa: misconfiguration warnings, on by default, to stderr', () => {
  afterEach(() => vi.restoreAllMocks())

  it('X-Forwarded-For while app.proxy is off: FG_WRN_FORWARDED_UNTRUSTED, once', async () => {
    const agent = serve(false, 0)
    const lines = await stderrOf(async () => {
      await agent.get('/').set('X-Forwarded-For', '198.51.100.7')
      await agent.get('/').set('X-Forwarded-For', '198.51.100.8')
    })
    expect(lines).toEqual([
      expect.stringMatching(
        /app\.proxy trusts no proxy.*maxIpsCount.*\(FG_WRN_FORWARDED_UNTRUSTED\)\n$/,
      ),
    ])
  })

  it('app.proxy trusting every hop keeps its own code; a bounded maxIpsCount is quiet', async () => {
    const lines = await stderrOf(async () => {
      await serve(true, 0).get('/')
      await serve(true, 1).get('/').set('X-Forwarded-For', '198.51.100.7')
    })
    expect(lines).toEqual([expect.stringMatching(/\(FG_WRN_KOA_PROXY_LEFTMOST_IP\)\n$/)])
  })

  it("names what to write instead of koa-ratelimit's options", async () => {
    const lines = await stderrOf(() =>
      rateLimit(RULES, {
        duration: 60_000,
        max: 100,
        errorMessage: 'slow down',
        disableHeader: true,
        blacklist: () => false,
        driver: 'memory',
      } as never),
    )
    expect(lines).toEqual([
      expect.stringMatching(/options\.duration .*; write a rule's window/),
      expect.stringMatching(/options\.max .*; write a rule's limit/),
      expect.stringMatching(/options\.errorMessage .*; write onRejected/),
      expect.stringMatching(/options\.disableHeader .*; write headers: false/),
      expect.stringMatching(/options\.blacklist .*; write deny: \{ ips: /),
      expect.stringMatching(/options\.driver .*; write store: a MemoryStore \(the default\)/),
    ])
    for (const line of lines) expect(line).toMatch(/\(FG_WRN_OPTION_UNKNOWN\)\n$/)
  })

  it("names what to write instead of express-rate-limit's options; warnings: false is silent", async () => {
    const lines = await stderrOf(() =>
      rateLimit(RULES, { windowMs: 1000, legacyHeaders: true } as never),
    )
    expect(lines).toEqual([
      expect.stringMatching(/options\.windowMs .*; write a rule's window/),
      expect.stringMatching(/options\.legacyHeaders .*; write headers: 'legacy' or 'both'/),
    ])
    const quiet = await stderrOf(async () => {
      rateLimit(RULES, { windowMs: 1000, warnings: false } as never)
      await serve(true, 0, { warnings: false }).get('/')
      await serve(false, 0, { warnings: false }).get('/').set('X-Forwarded-For', '198.51.100.7')
    })
    expect(quiet).toEqual([])
  })
})
