import type { Logger } from '@floodgate/core'
import floodgate, { rateLimit } from '@floodgate/fastify'
import Fastify from 'fastify'
import { describe, expect, it, vi } from 'vitest'

const rules = [{ id: 'per-ip', limit: 2, window: '1m' }]

describe('fastify plugin options', () => {
  it('has a default export, the plugin name, and rejects bad route config at startup', async () => {
    expect(floodgate).toBe(rateLimit)
    const app = Fastify()
    await app.register(rateLimit, { rules })
    expect(() => app.get('/x', { config: { rateLimit: { cost: -2 } } }, () => 'ok')).toThrow(
      /route GET \/x: config\.rateLimit\.cost: expected a positive number/,
    )
    expect(() =>
      app.get(
        '/y',
        { config: { rateLimit: { rules: [{ id: 'bad', limit: 0, window: '1s' }] } } },
        () => 'ok',
      ),
    ).toThrow(/route GET \/y: config\.rateLimit\.rules: .*limit/)
    expect(() =>
      app.get('/z', { config: { rateLimit: { cots: 1 } as never } }, () => 'ok'),
    ).toThrow(/config\.rateLimit\.cots: unknown setting/)
    await app.close()
  })

  it('matches the route pattern, not the path, and runs per-route rules with the global ones', async () => {
    const app = Fastify()
    await app.register(rateLimit, {
      rules: [{ id: 'users', match: 'GET /users/:id', limit: 1, window: '1m' }],
    })
    app.get('/users/:id', () => ({ ok: true }))
    app.get(
      '/search',
      { config: { rateLimit: { rules: [{ id: 'search', limit: 1, window: '1m' }] } } },
      () => ({ ok: true }),
    )
    expect((await app.inject('/users/1')).statusCode).toBe(200)
    expect((await app.inject('/users/2')).statusCode).toBe(429)
    const s1 = await app.inject('/search')
    expect(s1.headers['ratelimit-policy']).toBe('"search";q=1;w=60')
    const s2 = await app.inject('/search')
    expect(s2.statusCode).toBe(429)
    expect(s2.json()).toMatchObject({ 'violated-policies': ['search'] })
    await app.close()
  })

  it('logs through fastify.log by default, and a plugin registered twice charges once', async () => {
    const warn = vi.fn()
    const log: Logger = { debug: vi.fn(), info: vi.fn(), warn, error: vi.fn() }
    const app = Fastify()
    const { createLimiter } = await import('@floodgate/core')
    const limiter = createLimiter({ rules })
    await app.register(rateLimit, { rules: limiter as never, logger: log })
    await app.register(rateLimit, { rules: limiter as never, logger: log })
    app.get('/', () => ({ ok: true }))
    expect((await app.inject('/')).headers['ratelimit']).toMatch(/^"per-ip";r=1;/)
    expect((await app.inject('/')).statusCode).toBe(200)
    expect((await app.inject('/')).statusCode).toBe(429)
    await app.close()

    // A 404 passes both registrations' instance hooks and is charged once too.
    const twice = Fastify()
    const shared = createLimiter({ rules })
    await twice.register(rateLimit, { rules: shared as never, logger: log })
    await twice.register(rateLimit, { rules: shared as never, logger: log })
    expect((await twice.inject('/nope')).headers['ratelimit']).toMatch(/^"per-ip";r=1;/)
    expect((await twice.inject('/nope')).statusCode).toBe(404)
    expect((await twice.inject('/nope')).statusCode).toBe(429)
    await twice.close()
  })

  it('uses onRejected and skip', async () => {
    const app = Fastify()
    await app.register(rateLimit, {
      rules: [{ id: 'one', limit: 1, window: '1m' }],
      skip: (request) => request.headers['x-internal'] === '1',
      onRejected: (_request, reply, { status, body }) => {
        void reply.code(status).send({ slowDown: body.retryAfter })
      },
    })
    app.get('/', () => ({ ok: true }))
    expect((await app.inject('/')).statusCode).toBe(200)
    const limited = await app.inject('/')
    expect(limited.statusCode).toBe(429)
    expect(limited.json()).toStrictEqual({ slowDown: 60 })
    expect(limited.headers['retry-after']).toBe('60')
    expect((await app.inject({ url: '/', headers: { 'x-internal': '1' } })).statusCode).toBe(200)
    await app.close()
  })

  it('limits requests no route matched (404s), charging them once, with the global rules only', async () => {
    const app = Fastify()
    await app.register(rateLimit, {
      rules: [
        { id: 'per-ip', limit: 3, window: '1m' },
        { id: 'users', match: 'GET /users/:id', limit: 1, window: '1m' },
      ],
    })
    app.get('/users/:id', () => ({ ok: true }))
    app.get('/health', { config: { rateLimit: false } }, () => 'ok')
    // A route's request is charged by its own hook only: 1 of the 3 (r=1 after the 404 below).
    expect((await app.inject('/users/1')).statusCode).toBe(200)
    const missing = await app.inject('/wp-admin.php')
    expect(missing.statusCode).toBe(404)
    // 'users' matches a route pattern, so it says nothing about a 404.
    expect(missing.headers['ratelimit-policy']).toBe('"per-ip";q=3;w=60')
    expect(missing.headers['ratelimit']).toBe('"per-ip";r=1;t=40')
    expect((await app.inject('/.env')).statusCode).toBe(404)
    // The probing spent the quota the routes share.
    const probe = await app.inject('/.git/config')
    expect(probe.statusCode).toBe(429)
    expect(probe.headers['content-type']).toBe('application/problem+json; charset=utf-8')
    expect((await app.inject('/users/2')).statusCode).toBe(429)
    expect((await app.inject('/health')).statusCode).toBe(200)
    await app.close()
  })

  it('limits a custom not-found handler too, and leaves 404s alone with limitNotFound: false', async () => {
    const limited = Fastify()
    await limited.register(rateLimit, { rules: [{ id: 'one', limit: 1, window: '1m' }] })
    limited.setNotFoundHandler((_request, reply) => reply.code(404).send({ nope: true }))
    await limited.ready()
    expect((await limited.inject('/a')).json()).toStrictEqual({ nope: true })
    expect((await limited.inject('/b')).statusCode).toBe(429)
    await limited.close()

    const open = Fastify()
    await open.register(rateLimit, {
      rules: [{ id: 'one', limit: 1, window: '1m' }],
      limitNotFound: false,
    })
    app404Route(open)
    for (let i = 0; i < 3; i++) {
      const res = await open.inject('/missing')
      expect(res.statusCode).toBe(404)
      expect(res.headers['ratelimit']).toBeUndefined()
    }
    expect((await open.inject('/here')).statusCode).toBe(200)
    expect((await open.inject('/here')).statusCode).toBe(429)
    await open.close()

    const bad = Fastify()
    await expect(
      bad.register(rateLimit, { rules, limitNotFound: 'yes' as unknown as boolean }),
    ).rejects.toThrow(/options\.limitNotFound: expected a boolean, got "yes"/)
  })

  it('closes a limiter it built when the app closes', async () => {
    const app = Fastify()
    await app.register(rateLimit, { rules })
    app.get('/', () => 'ok')
    await app.ready()
    await expect(app.close()).resolves.toBeUndefined()
  })

  it('still calls a handler given as onLimited, its old name, and says so', async () => {
    const warn = vi.fn<(obj: object, msg?: string) => void>()
    const log: Logger = { debug: vi.fn(), info: vi.fn(), warn, error: vi.fn() }
    const app = Fastify()
    await app.register(rateLimit, {
      rules: [{ id: 'one', limit: 1, window: '1m' }],
      logger: log,
      onLimited: (_request, reply, { status }) => {
        void reply.code(status).send({ old: true })
      },
    })
    app.get('/', () => ({ ok: true }))
    await app.inject('/')
    expect((await app.inject('/')).json()).toStrictEqual({ old: true })
    const renamed = warn.mock.calls.filter(
      ([obj]) => (obj as { code?: string }).code === 'FG_WRN_OPTION_RENAMED',
    )
    expect(renamed).toHaveLength(1)
    expect(renamed[0]![1]).toContain('the option onLimited is now called onRejected')
    await app.close()
  })
})

function app404Route(app: ReturnType<typeof Fastify>): void {
  app.get('/here', () => 'ok')
}
