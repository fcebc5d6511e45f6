import type { Decision } from '@floodgate/core'
import type { Rejection } from '@floodgate/core/http'
import floodgate, { rateLimit, type RateLimitInfo, type RouteRateLimit } from '@floodgate/fastify'
import Fastify, { type FastifyContextConfig, type FastifyRequest } from 'fastify'
import { describe, expectTypeOf, it } from 'vitest'

describe('@floodgate/fastify types', () => {
  it('registers with typed options', async () => {
    const app = Fastify()
    await app.register(rateLimit, {
      rules: [{ id: 'a', limit: 10, window: '1m' }],
      keys: { user: (request) => request.headers['x-user'] as string | undefined },
      onRejected: (request, reply, rejection) => {
        expectTypeOf(request).toEqualTypeOf<FastifyRequest>()
        expectTypeOf(rejection).toEqualTypeOf<Rejection>()
        void reply.code(rejection.status).send()
      },
    })
    await app.register(floodgate, { rules: [] })
  })

  it('types request.rateLimit (module augmentation) and the hook option', async () => {
    const app = Fastify()
    await app.register(rateLimit, { rules: [], hook: 'preHandler', headers: 'draft-7' })
    // @ts-expect-error hook is 'onRequest' or 'preHandler'
    await app.register(rateLimit, { rules: [], hook: 'onSend' })
    app.get('/', (request) => {
      expectTypeOf(request.rateLimit).toEqualTypeOf<RateLimitInfo | undefined>()
      expectTypeOf(request.rateLimit?.decision).toEqualTypeOf<Decision | undefined>()
      return { remaining: request.rateLimit?.remaining }
    })
  })

  it('augments route config', () => {
    const app = Fastify()
    expectTypeOf<FastifyContextConfig['rateLimit']>().toEqualTypeOf<
      RouteRateLimit | false | undefined
    >()
    app.get('/a', { config: { rateLimit: { cost: 10 } } }, () => 'ok')
    app.get('/b', { config: { rateLimit: false } }, () => 'ok')
    app.get(
      '/c',
      { config: { rateLimit: { cost: (request) => (request.url.length > 10 ? 2 : 1) } } },
      () => 'ok',
    )
    app.get(
      '/d',
      { config: { rateLimit: { rules: [{ id: 'd', limit: 1, window: '1s' }] } } },
      () => 'ok',
    )
    // @ts-expect-error cost must be a number or a function
    app.get('/e', { config: { rateLimit: { cost: 'ten' } } }, () => 'ok')
  })
})
