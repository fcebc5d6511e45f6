import { createLimiter, type Logger } from '@floodgate/core'
import { rateLimit } from '@floodgate/fastify'
import Fastify, { type FastifyRequest } from 'fastify'
import { describe, expect, it, vi } from 'vitest'

const rules = [{ id: 'per-ip', limit: 1, window: '1m' }]

function logger() {
  const warn = vi.fn<(obj: object, msg?: string) => void>()
  const log: Logger = { debug: vi.fn(), info: vi.fn(), warn, error: vi.fn() }
  const codes = () => warn.mock.calls.map((c) => (c[0] as { code?: string }).code)
  return Object.assign(log, { warn, codes })
}

// Fastify 5's types refuse a number for trustProxy; JavaScript apps pass one all the same.
const numeric = (n: number) => n as unknown as boolean

describe('fastify: trustProxy', () => {
  it('with a number, Fastify 5 trusts no proxy: every client behind it shares one IP', async () => {
    const app = Fastify({ trustProxy: numeric(1) })
    app.get('/', (request, reply) => void reply.send(request.ip))
    const ip = await app.inject({
      url: '/',
      remoteAddress: '10.0.0.1',
      headers: { 'x-forwarded-for': '203.0.113.7' },
    })
    expect(ip.body).toBe('10.0.0.1')
    await app.close()
  })

  it('warns once at startup when trustProxy is a number, through the given logger', async () => {
    for (const [trustProxy, warned] of [
      [1, true],
      [2, true],
      [0, false],
      [true, false],
      ['10.0.0.0/8', false],
      [undefined, false],
    ] as const) {
      const log = logger()
      const app = Fastify({
        trustProxy: typeof trustProxy === 'number' ? numeric(trustProxy) : trustProxy,
      })
      await app.register(rateLimit, { rules, logger: log })
      await app.ready()
      expect(log.codes(), `trustProxy ${String(trustProxy)}`).toEqual(
        warned ? ['FG_WRN_FASTIFY_TRUST_PROXY_COUNT'] : [],
      )
      await app.close()
    }
  })

  it("warns inside an encapsulated registration too, and keys by the proxy's client with addresses", async () => {
    const log = logger()
    const app = Fastify({ trustProxy: numeric(1) })
    await app.register(async (child) => {
      await child.register(rateLimit, { rules, logger: log })
    })
    await app.ready()
    expect(log.codes()).toEqual(['FG_WRN_FASTIFY_TRUST_PROXY_COUNT'])
    await app.close()

    const fixed = Fastify({ trustProxy: '10.0.0.0/8' })
    await fixed.register(rateLimit, { rules })
    fixed.get('/', (_request, reply) => void reply.send('ok'))
    const from = (client: string) =>
      fixed.inject({ url: '/', remoteAddress: '10.0.0.1', headers: { 'x-forwarded-for': client } })
    expect((await from('203.0.113.7')).statusCode).toBe(200)
    expect((await from('203.0.113.8')).statusCode).toBe(200)
    expect((await from('203.0.113.7')).statusCode).toBe(429)
    await fixed.close()
  })
})

describe('fastify: 404s under a prefixed registration', () => {
  it('are limited once the prefixed context has its own not-found handler', async () => {
    const app = Fastify()
    await app.register(
      async (api) => {
        await api.register(rateLimit, { rules })
        api.get('/items', (_request, reply) => void reply.send('ok'))
        api.setNotFoundHandler((_request, reply) => void reply.code(404).send('no such item'))
      },
      { prefix: '/api' },
    )
    expect((await app.inject('/api/nope')).statusCode).toBe(404)
    expect((await app.inject('/api/nope')).statusCode).toBe(429)
    await app.close()
  })

  it('are limited when the plugin is also registered at the root with the same limiter, each request charged once', async () => {
    const limiter = createLimiter<FastifyRequest>({
      rules: [{ id: 'per-ip', limit: 2, window: '1m' }],
    })
    const app = Fastify()
    await app.register(rateLimit, { rules: limiter })
    await app.register(
      async (api) => {
        await api.register(rateLimit, { rules: limiter })
        api.get('/items', (_request, reply) => void reply.send('ok'))
      },
      { prefix: '/api' },
    )
    expect((await app.inject('/api/items')).statusCode).toBe(200)
    expect((await app.inject('/api/nope')).statusCode).toBe(404)
    expect((await app.inject('/api/items')).statusCode).toBe(429)
    expect((await app.inject('/api/nope')).statusCode).toBe(429)
    await app.close()
    await limiter.close()
  })

  it('are not limited by a registration inside the prefix alone (Fastify answers them at the root)', async () => {
    const app = Fastify()
    await app.register(
      async (api) => {
        await api.register(rateLimit, { rules })
        api.get('/items', (_request, reply) => void reply.send('ok'))
      },
      { prefix: '/api' },
    )
    for (let i = 0; i < 3; i++) expect((await app.inject('/api/nope')).statusCode).toBe(404)
    await app.close()
  })
})
