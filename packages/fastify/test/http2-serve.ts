import Fastify, { type FastifyRequest } from 'fastify'
import type { AddressInfo } from 'node:net'
import type { Limiter } from '@floodgate/core'
import type { Http2Serve } from '@floodgate/core/testing'
import { rateLimit } from '@floodgate/fastify'

/** Fastify's own HTTP/2 server, cleartext (no `https`): h2c. */
export const serveFastifyHttp2: Http2Serve = async (limiter, enter, errors) => {
  const app = Fastify({ http2: true })
  app.setErrorHandler((err, _request, reply) => {
    errors.push(err)
    return reply.send(err)
  })
  await app.register(rateLimit, { rules: limiter as Limiter<FastifyRequest> })
  app.all('/*', async (request) => {
    await enter(request.url, request.raw)
    return 'ok'
  })
  await app.listen({ port: 0, host: '127.0.0.1' })
  return {
    port: (app.server.address() as AddressInfo).port,
    close: () => app.close(),
  }
}
