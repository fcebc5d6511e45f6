import type { Decision, Limiter } from '@floodgate/core'
import type { Rejection } from '@floodgate/core/http'
import { rateLimit, type RateLimitInfo, type RateLimitMiddleware } from '@floodgate/koa'
import type { Context, Middleware } from 'koa'
import { describe, expectTypeOf, it } from 'vitest'

describe('@floodgate/koa types', () => {
  it('accepts rules and typed options', () => {
    const mw = rateLimit([{ id: 'a', limit: 10, window: '1m' }], {
      keys: { user: (ctx) => ctx.get('x-user') || undefined },
      skip: (ctx) => ctx.path === '/health',
      cost: (ctx) => (ctx.method === 'POST' ? 5 : 1),
      onRejected: (ctx, rejection) => {
        expectTypeOf(rejection).toEqualTypeOf<Rejection>()
        ctx.status = rejection.status
      },
    })
    expectTypeOf(mw).toExtend<Middleware>()
    expectTypeOf(mw).toEqualTypeOf<RateLimitMiddleware>()
    expectTypeOf(mw.limiter).toEqualTypeOf<Limiter<Context>>()
  })

  it('types ctx.state.rateLimit (module augmentation)', () => {
    const mw: Middleware = async (ctx, next) => {
      expectTypeOf(ctx.state.rateLimit).toEqualTypeOf<RateLimitInfo | undefined>()
      expectTypeOf(ctx.state.rateLimit?.decision).toEqualTypeOf<Decision | undefined>()
      expectTypeOf(ctx.state.rateLimit?.remaining).toEqualTypeOf<number | undefined>()
      await next()
    }
    const onContext = (ctx: Context) => ctx.state.rateLimit?.resetMs
    expectTypeOf(onContext).returns.toEqualTypeOf<number | undefined>()
    void mw
  })

  it('rejects wrong option types', () => {
    // @ts-expect-error headers takes a boolean or a HeaderFormat
    rateLimit([], { headers: 'draft-6' })
    rateLimit([], { headers: 'draft-7', warnings: false, allow: { ips: ['10.0.0.0/8'] } })
    // @ts-expect-error shadowHeader is a boolean
    rateLimit([], { shadowHeader: 'yes' })
  })
})
