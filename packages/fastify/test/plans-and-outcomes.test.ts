import type { AddressInfo } from 'node:net'
import { rateLimit } from '@floodgate/fastify'
import { describePlansAndOutcomes } from '@floodgate/core/testing'
import type { Limiter } from '@floodgate/core'
import Fastify, { type FastifyRequest } from 'fastify'

describePlansAndOutcomes('fastify', async (limiter, options) => {
  const app = Fastify()
  await app.register(rateLimit, { rules: limiter as Limiter<FastifyRequest>, ...options })
  app.get('/items', () => 'ok')
  app.post('/login', (request, reply) =>
    reply.code(Number(request.headers['x-status'] ?? 200)).send(''),
  )
  // Never answers: the client goes away first.
  app.get('/hang', (request) => new Promise<void>((resolve) => request.raw.once('close', resolve)))
  await app.listen({ port: 0, host: '127.0.0.1' })
  return {
    url: `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`,
    close: async () => {
      app.server.closeAllConnections()
      await app.close()
    },
  }
})
