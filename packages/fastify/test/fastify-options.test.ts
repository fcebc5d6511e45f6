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
  })

  it('uses onLimited and skip', async () => {
    const app = Fastify()
    await app.register(rateLimit, {
      rules: [{ id: 'one', limit: 1, window: '1m' }],
      skip: (request) => request.headers['x-internal'] === '1',
      onLimited: (_request, reply, { status, body }) => {
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

  it('closes a limiter it built when the app closes', async () => {
    const app = Fastify()
    await app.register(rateLimit, { rules })
    app.get('/', () => 'ok')
    await app.ready()
    await expect(app.close()).resolves.toBeUndefined()
  })
})
