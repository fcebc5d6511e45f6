import type { AddressInfo } from 'node:net'
import type { Limiter } from '@floodgate/core'
import { describeSpellingProperty, type SpellingVariant } from '@floodgate/core/testing'
import { rateLimit } from '@floodgate/fastify'
import Fastify, { type FastifyRequest } from 'fastify'

function variant(
  name: string,
  routerOptions: {
    caseSensitive: boolean
    ignoreTrailingSlash: boolean
    ignoreDuplicateSlashes: boolean
    useSemicolonDelimiter?: boolean
  },
): SpellingVariant {
  return {
    name,
    async start(limiter, routes) {
      const app = Fastify({ routerOptions })
      await app.register(rateLimit, { rules: limiter as unknown as Limiter<FastifyRequest> })
      for (const r of routes) {
        app.route({
          method: r.method,
          url: r.path,
          handler: (request, reply) => void reply.send({ route: r.path, params: request.params }),
        })
      }
      await app.listen({ port: 0, host: '127.0.0.1' })
      return {
        port: (app.server.address() as AddressInfo).port,
        close: async () => {
          app.server.closeAllConnections()
          await app.close()
        },
      }
    },
  }
}

describeSpellingProperty('fastify', [
  variant('default routing', {
    caseSensitive: true,
    ignoreTrailingSlash: false,
    ignoreDuplicateSlashes: false,
  }),
  variant('case-insensitive, ignoring trailing and duplicate slashes', {
    caseSensitive: false,
    ignoreTrailingSlash: true,
    ignoreDuplicateSlashes: true,
  }),
  variant('with useSemicolonDelimiter', {
    caseSensitive: true,
    ignoreTrailingSlash: false,
    ignoreDuplicateSlashes: false,
    useSemicolonDelimiter: true,
  }),
])
