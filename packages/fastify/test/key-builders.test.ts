import type { AddressInfo } from 'node:net'
import { rateLimit } from '@floodgate/fastify'
import { describeClientChosenKeys } from '@floodgate/core/testing'
import type { Limiter } from '@floodgate/core'
import Fastify, { type FastifyRequest } from 'fastify'

describeClientChosenKeys('fastify', async (limiter) => {
  const app = Fastify()
  await app.register(rateLimit, { rules: limiter as Limiter<FastifyRequest> })
  app.get('/items', () => 'ok')
  await app.listen({ port: 0, host: '127.0.0.1' })
  return {
    url: `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`,
    close: async () => {
      app.server.closeAllConnections()
      await app.close()
    },
  }
})
