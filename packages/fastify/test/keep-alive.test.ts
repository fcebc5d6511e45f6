import type { Limiter } from '@floodgate/core'
import { describeKeepAliveProperty, listenOnLoopback } from '@floodgate/core/testing'
import { rateLimit } from '@floodgate/fastify'
import Fastify, { type FastifyRequest } from 'fastify'

describeKeepAliveProperty('fastify', async (limiter) => {
  const app = Fastify()
  await app.register(rateLimit, { rules: limiter as Limiter<FastifyRequest> })
  app.all('/x', (_request, reply) => reply.send('ok'))
  app.get('/boom', () => {
    throw new Error('boom')
  })
  await app.ready()
  return listenOnLoopback(app.server)
})
