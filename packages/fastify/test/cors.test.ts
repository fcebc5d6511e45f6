import type { AddressInfo } from 'node:net'
import { rateLimit, type FastifyRateLimitOptions } from '@floodgate/fastify'
import Fastify, { type FastifyReply, type FastifyRequest } from 'fastify'
import { describeCorsExposure } from '@floodgate/core/testing'
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

const closers: Array<() => Promise<void>> = []
afterEach(async () => {
  await Promise.all(closers.splice(0).map((close) => close()))
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
  closers.push(async () => {
    app.server.closeAllConnections()
    await app.close()
  })
  return `http://127.0.0.1:${(app.server.address() as AddressInfo).port}/items`
}

describeCorsExposure('fastify', serve)

describe('fastify: exposeHeaders option', () => {
  it('refuses a non-boolean exposeHeaders at registration', async () => {
    await expect(
      Fastify().register(rateLimit, { rules: [], exposeHeaders: 'yes' as never }),
    ).rejects.toThrow(/options\.exposeHeaders: expected a boolean/)
  })
})
