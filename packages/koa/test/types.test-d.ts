import type { Limiter } from '@floodgate/core'
import type { Rejection } from '@floodgate/core/http'
import { rateLimit, type RateLimitMiddleware } from '@floodgate/koa'
import type { Context, Middleware } from 'koa'
import { describe, expectTypeOf, it } from 'vitest'

describe('@floodgate/koa types', () => {
  it('accepts rules and typed options', () => {
    const mw = rateLimit([{ id: 'a', limit: 10, window: '1m' }], {
      keys: { user: (ctx) => ctx.get('x-user') || undefined },
      skip: (ctx) => ctx.path === '/health',
      cost: (ctx) => (ctx.method === 'POST' ? 5 : 1),
      onLimited: (ctx, rejection) => {
        expectTypeOf(rejection).toEqualTypeOf<Rejection>()
        ctx.status = rejection.status
      },
    })
    expectTypeOf(mw).toExtend<Middleware>()
    expectTypeOf(mw).toEqualTypeOf<RateLimitMiddleware>()
    expectTypeOf(mw.limiter).toEqualTypeOf<Limiter<Context>>()
  })

  it('rejects wrong option types', () => {
    // @ts-expect-error shadowHeader is a boolean
    rateLimit([], { shadowHeader: 'yes' })
  })
})
