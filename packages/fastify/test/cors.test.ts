import type { AddressInfo } from 'node:net'
import { rateLimit, type FastifyRateLimitOptions } from '@floodgate/fastify'
import Fastify, { type FastifyReply, type FastifyRequest } from 'fastify'
import { afterEach, describe, expect, it } from 'vitest'

// An onRequest hook shaped like `@fastify/cors`: it answers preflights itself and exposes its own names.
function cors(request: FastifyRequest, reply: FastifyReply, done: () => void): void {
  void reply.header('Access-Control-Allow-Origin', '*')
  void reply.header('Access-Control-Expose-Headers', 'X-Request-Id, ratelimit')
  if (request.method === 'OPTIONS' && request.headers['access-control-request-method']) {
    void reply.code(204).send()
    return
  }
  done()
}

let close: (() => Promise<void>) | undefined
afterEach(async () => {
  await close?.()
  close = undefined
})

async function serve(
  options: Omit<FastifyRateLimitOptions, 'rules'>,
  withCors: boolean,
): Promise<string> {
  const app = Fastify()
  if (withCors) app.addHook('onRequest', cors)
  await app.register(rateLimit, { rules: [{ id: 'per-ip', limit: 1, window: '1m' }], ...options })
  app.put('/items', (_request, reply) => void reply.send('ok'))
  await app.listen({ port: 0, host: '127.0.0.1' })
  close = async () => {
    app.server.closeAllConnections()
    await app.close()
  }
  return `http://127.0.0.1:${(app.server.address() as AddressInfo).port}/items`
}

const origin = { origin: 'https://app.example' }
const preflight = {
  method: 'OPTIONS',
  headers: { ...origin, 'access-control-request-method': 'PUT' },
}

describe('fastify: CORS', () => {
  it('exposes the limiter headers after the cors names, on allowed and refused requests', async () => {
    const url = await serve({ exposeHeaders: true }, true)
    const ok = await fetch(url, { method: 'PUT', headers: origin })
    expect(ok.status).toBe(200)
    expect(ok.headers.get('access-control-expose-headers')).toBe(
      'X-Request-Id, ratelimit, RateLimit-Policy, Retry-After',
    )
    const refused = await fetch(url, { method: 'PUT', headers: origin })
    expect(refused.status).toBe(429)
    expect(refused.headers.get('access-control-expose-headers')).toBe(
      'X-Request-Id, ratelimit, RateLimit-Policy, Retry-After',
    )
    expect(refused.headers.get('retry-after')).not.toBeNull()
  })

  it('does not charge preflights the cors middleware answers before the limiter', async () => {
    const url = await serve({ exposeHeaders: true }, true)
    for (let i = 0; i < 3; i++) expect((await fetch(url, preflight)).status).toBe(204)
    expect((await fetch(url, { method: 'PUT', headers: origin })).status).toBe(200)
  })

  it('names every header it may send, alone when no cors middleware ran, none when off', async () => {
    let url = await serve({ exposeHeaders: true, headers: 'both', shadowHeader: true }, false)
    expect((await fetch(url, { method: 'PUT' })).headers.get('access-control-expose-headers')).toBe(
      'RateLimit-Policy, RateLimit, X-RateLimit-Limit, X-RateLimit-Remaining, X-RateLimit-Reset, Retry-After, Floodgate-Shadow',
    )
    await close?.()
    url = await serve({}, false)
    expect(
      (await fetch(url, { method: 'PUT' })).headers.get('access-control-expose-headers'),
    ).toBeNull()
  })

  it('refuses a non-boolean exposeHeaders at registration', async () => {
    await expect(
      Fastify().register(rateLimit, { rules: [], exposeHeaders: 'yes' as never }),
    ).rejects.toThrow(/options\.exposeHeaders: expected a boolean/)
  })
})
