import { readFile } from 'node:fs/promises'
import type { AddressInfo } from 'node:net'
import { join, posix } from 'node:path'
import type { Limiter } from '@floodgate/core'
import { describeFileServerSpellings } from '@floodgate/core/testing'
import { rateLimit } from '@floodgate/fastify'
import Fastify, { type FastifyRequest } from 'fastify'

// A file server as @fastify/static reads a path: the root wildcard route's parameter
// (encoded slashes decoded by the router), dot segments resolved, nothing above the root.
describeFileServerSpellings('fastify', async (limiter, root) => {
  const app = Fastify()
  await app.register(rateLimit, { rules: limiter as unknown as Limiter<FastifyRequest> })
  app.get('/*', async (request, reply) => {
    const relative = posix.normalize(`./${(request.params as { '*': string })['*']}`)
    if (relative.startsWith('..')) return reply.code(403).send()
    try {
      return await readFile(join(root, relative), 'utf8')
    } catch {
      return reply.code(404).send()
    }
  })
  await app.listen({ port: 0, host: '127.0.0.1' })
  return {
    port: (app.server.address() as AddressInfo).port,
    close: async () => {
      app.server.closeAllConnections()
      await app.close()
    },
  }
})
