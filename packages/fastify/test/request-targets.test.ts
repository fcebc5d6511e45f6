import type { AddressInfo } from 'node:net'
import { createLimiter, type Limiter } from '@floodgate/core'
import { describeSpellingProperty, sendRaw, type SpellingVariant } from '@floodgate/core/testing'
import { rateLimit } from '@floodgate/fastify'
import Fastify, { type FastifyInstance, type FastifyRequest } from 'fastify'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'

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

// Fastify's router refuses a path with an invalid percent-escape itself, with 400 and before
// any hook runs: the limiter never sees it, and no handler runs either. Such requests cost the
// client no quota here (Express and Koa route them, so their limiter decides and counts them).
describe('fastify: a target with an invalid percent-escape', () => {
  let decisions = 0
  let handled = 0
  const limiter = createLimiter({
    rules: [{ id: 'all', limit: 1_000, window: '1m' }],
    onDecision: () => void decisions++,
  })
  let app: FastifyInstance | undefined
  beforeAll(async () => {
    app = Fastify()
    await app.register(rateLimit, { rules: limiter as unknown as Limiter<FastifyRequest> })
    const handler = () => Promise.resolve({ handled: ++handled })
    app.get('/admin/:name', handler)
    app.get('/*', handler)
    await app.listen({ port: 0, host: '127.0.0.1' })
  })
  afterAll(async () => {
    await app?.close()
    await limiter.close()
  })

  it.each(['/admin/%zz', '/admin/%', '/files/%E0%A4%A', '/%zz?a=1'])(
    '%s is answered 400 by Fastify: not decided, not handled',
    async (target) => {
      const { port } = app!.server.address() as AddressInfo
      const r = await sendRaw(port, 'GET', target)
      expect(r.status).toBe(400)
      expect({ decisions, handled }).toStrictEqual({ decisions: 0, handled: 0 })
    },
  )

  it('a well-formed target on the same routes is decided', async () => {
    const { port } = app!.server.address() as AddressInfo
    expect((await sendRaw(port, 'GET', '/admin/%41')).status).toBe(200)
    expect(decisions).toBe(1)
  })
})
