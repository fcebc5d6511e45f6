import { createLimiter, type Logger } from '@floodgate/core'
import { rateLimit } from '@floodgate/express'
import express, { type Request } from 'express'
import request from 'supertest'
import { describe, expect, it, vi } from 'vitest'

const logger = () => {
  const warn = vi.fn<(obj: object, msg?: string) => void>()
  const log: Logger = { debug: vi.fn(), info: vi.fn(), warn, error: vi.fn() }
  return Object.assign(log, { warn })
}

describe('express rateLimit options', () => {
  it('returns a function named rateLimit that exposes its limiter', () => {
    const mw = rateLimit([{ id: 'a', limit: 1, window: '1s' }])
    expect(mw.name).toBe('rateLimit')
    expect(typeof mw.limiter.check).toBe('function')
  })

  it('throws at construction on bad rules and bad options, naming the field', () => {
    expect(() => rateLimit([{ id: 'a', limit: -1, window: '1s' }])).toThrow(/rules\[0\]\.limit/)
    expect(() => rateLimit([], { cost: 0 })).toThrow(/options\.cost/)
    expect(() => rateLimit([], { headers: 'draft-8' as never })).toThrow(/options\.headers/)
    const limiter = createLimiter({ rules: [] })
    expect(() => rateLimit(limiter, { timeoutMs: 5 })).toThrow(/shared Limiter/)
  })

  it('refuses an async key builder at startup: a ported async keyGenerator would let every request pass unjudged', () => {
    const rules = [{ id: 'per-user', key: 'user', limit: 1, window: '1m' }]
    expect(() =>
      rateLimit(rules, {
        keys: { user: (async (req: Request) => await Promise.resolve(req.ip)) as never },
      }),
    ).toThrow(/keys\.user: expected a synchronous function/)
  })

  it('warns once about unknown options', () => {
    const log = logger()
    rateLimit([], { logger: log, windowMs: 1000 } as never)
    expect(log.warn).toHaveBeenCalledWith(
      expect.objectContaining({ code: 'FG_WRN_OPTION_UNKNOWN' }),
      expect.stringContaining('options.windowMs'),
    )
  })

  it('charges once when one limiter is mounted on the app and again on a router', async () => {
    const log = logger()
    const limiter = createLimiter<Request>({ rules: [{ id: 'a', limit: 2, window: '1m' }] })
    const app = express()
    const mw = rateLimit(limiter, { logger: log })
    const router = express.Router()
    router.use(mw)
    router.get('/x', (_req, res) => void res.send('ok'))
    app.use(mw)
    app.use('/api', router)
    const agent = request(app)
    expect((await agent.get('/api/x')).headers['ratelimit']).toMatch(/^"a";r=1;/)
    expect((await agent.get('/api/x')).status).toBe(200)
    expect((await agent.get('/api/x')).status).toBe(429)
    expect(log.warn).toHaveBeenCalledTimes(1)
    expect(log.warn.mock.calls[0]?.[0]).toMatchObject({ code: 'FG_WRN_DOUBLE_MOUNT' })
  })

  it('matches rules against the full path under a router prefix, and the pattern on a route', async () => {
    const app = express()
    const router = express.Router()
    router.use(rateLimit([{ id: 'api', match: '/api/**', limit: 1, window: '1m' }]))
    router.get('/users/:id', (_req, res) => void res.send('ok'))
    app.use('/api', router)
    app.get(
      '/items/:id',
      rateLimit([{ id: 'items', match: 'GET /items/:id', limit: 1, window: '1m' }]),
      (_req, res) => void res.send('ok'),
    )
    const agent = request(app)
    expect((await agent.get('/api/users/1')).status).toBe(200)
    expect((await agent.get('/api/users/2')).status).toBe(429)
    expect((await agent.get('/items/1')).status).toBe(200)
    expect((await agent.get('/items/2')).status).toBe(429)
  })

  it('skips, calls onRejected, and keys by user', async () => {
    const app = express()
    app.use(
      rateLimit([{ id: 'per-user', key: 'user', limit: 1, window: '1m' }], {
        keys: { user: (req) => req.get('x-user') },
        skip: (req) => req.get('x-internal') === '1',
        onRejected: (_req, res, _next, { status, body }) =>
          void res.status(status).json({ error: body.detail, retry: body.retryAfter }),
      }),
    )
    app.get('/', (_req, res) => void res.send('ok'))
    const agent = request(app)
    expect((await agent.get('/').set('x-user', 'ann')).status).toBe(200)
    expect((await agent.get('/').set('x-user', 'bob')).status).toBe(200)
    const limited = await agent.get('/').set('x-user', 'ann')
    expect(limited.status).toBe(429)
    expect(limited.headers['retry-after']).toBe('60')
    expect(limited.body).toStrictEqual({
      error: 'Rate limit exceeded (per-user); retry in 60 s.',
      retry: 60,
    })
    expect((await agent.get('/').set('x-user', 'ann').set('x-internal', '1')).status).toBe(200)
  })

  it('charges a cost function, and falls back to 1 with one warning when it misbehaves', async () => {
    const log = logger()
    const app = express()
    app.use(
      rateLimit([{ id: 'a', limit: 10, window: '1m', algorithm: 'fixed-window' }], {
        logger: log,
        cost: (req) => Number(req.query['n']),
      }),
    )
    app.get('/', (_req, res) => void res.send('ok'))
    const agent = request(app)
    expect((await agent.get('/?n=4')).headers['ratelimit']).toMatch(/^"a";r=6;t=\d+$/)
    expect((await agent.get('/?n=oops')).headers['ratelimit']).toMatch(/^"a";r=5;t=\d+$/)
    expect((await agent.get('/?n=-1')).status).toBe(200)
    expect(log.warn).toHaveBeenCalledTimes(1)
    expect(log.warn.mock.calls[0]?.[0]).toMatchObject({ code: 'FG_WRN_COST_INVALID' })
  })

  it('still calls a handler given as onLimited, its old name, and says so once', async () => {
    const log = logger()
    const mount = (): ReturnType<typeof rateLimit> =>
      rateLimit([{ id: 'a', limit: 1, window: '1m' }], {
        logger: log,
        onLimited: (_req, res, _next, { status }) => void res.status(status).json({ old: true }),
      })
    const app = express()
    app.use(mount())
    app.get('/', (_req, res) => void res.send('ok'))
    mount()
    const agent = request(app)
    await agent.get('/')
    expect((await agent.get('/')).body).toStrictEqual({ old: true })
    const renamed = log.warn.mock.calls.filter(
      ([obj]) => (obj as { code?: string }).code === 'FG_WRN_OPTION_RENAMED',
    )
    expect(renamed).toEqual([
      [
        expect.objectContaining({ code: 'FG_WRN_OPTION_RENAMED' }),
        'rateLimit: the option onLimited is now called onRejected; the old name works until the next version',
      ],
    ])
    expect(() => rateLimit([], { onLimited: () => {}, onRejected: () => {} })).toThrow(
      'onLimited and onRejected are the same option',
    )
  })
})
