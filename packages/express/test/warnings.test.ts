import { rateLimit } from '@floodgate/express'
import express from 'express'
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

function app(trustProxy: unknown, options: Parameters<typeof rateLimit>[1] = {}) {
  const a = express()
  a.set('trust proxy', trustProxy)
  a.use(rateLimit(RULES, options))
  a.get('/', (_req, res) => void res.send('ok'))
  return a
}

describe('express: misconfiguration warnings, on by default, to stderr', () => {
  afterEach(() => vi.restoreAllMocks())

  it('X-Forwarded-For while no proxy is trusted: FG_WRN_FORWARDED_UNTRUSTED, once', async () => {
    const a = app(false)
    const lines = await stderrOf(async () => {
      await request(a).get('/').set('X-Forwarded-For', '198.51.100.7')
      await request(a).get('/').set('X-Forwarded-For', '198.51.100.8')
    })
    expect(lines).toHaveLength(1)
    expect(lines[0]).toMatch(/X-Forwarded-For.*trust proxy.*\(FG_WRN_FORWARDED_UNTRUSTED\)\n$/)
  })

  it('trust proxy true: FG_WRN_TRUST_PROXY_ALL, once; a hop count is fine', async () => {
    const lines = await stderrOf(async () => {
      const a = app(true)
      await request(a).get('/')
      await request(a).get('/')
      const b = app(1)
      await request(b).get('/').set('X-Forwarded-For', '198.51.100.7')
    })
    expect(lines).toHaveLength(1)
    expect(lines[0]).toMatch(/trusts every proxy.*\(FG_WRN_TRUST_PROXY_ALL\)/)
  })

  it("names what to write instead of express-rate-limit's options", async () => {
    const lines = await stderrOf(() =>
      rateLimit(RULES, {
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
    expect(lines.find((l) => l.includes('standardHeaders'))).toMatch(/write headers: 'draft-7'/)
    expect(lines.find((l) => l.includes('handler'))).toMatch(/write onRejected/)
  })

  it('warnings: false turns every one off; a logger receives them instead of stderr', async () => {
    const silent = await stderrOf(async () => {
      rateLimit(RULES, { max: 5, warnings: false } as never)
      await request(app(true, { warnings: false })).get('/')
      await request(app(false, { warnings: false }))
        .get('/')
        .set('X-Forwarded-For', '198.51.100.7')
    })
    expect(silent).toEqual([])
    const warn = vi.fn()
    const logger = { debug: vi.fn(), info: vi.fn(), warn, error: vi.fn() }
    const logged = await stderrOf(() => request(app(true, { logger })).get('/'))
    expect(logged).toEqual([])
    expect(warn).toHaveBeenCalledWith(
      expect.objectContaining({ code: 'FG_WRN_TRUST_PROXY_ALL' }),
      expect.stringContaining('trusts every proxy'),
    )
  })
})
