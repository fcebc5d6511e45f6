import { createLimiter, type Limiter } from '@floodgate/core'
import { type Rejection } from '@floodgate/core/http'
import {
  rateLimit,
  type ExpressRateLimitOptions,
  type RateLimitMiddleware,
} from '@floodgate/express'
import type { Request, RequestHandler } from 'express'
import { describe, expectTypeOf, it } from 'vitest'

describe('@floodgate/express types', () => {
  it('accepts rules, a shared limiter, and typed options', () => {
    const mw = rateLimit([{ id: 'a', limit: 10, window: '1m' }], {
      keys: { user: (req) => req.get('x-user') },
      skip: (req) => req.path === '/health',
      cost: (req) => (req.method === 'POST' ? 5 : 1),
      headers: 'both',
      onLimited: (_req, res, _next, rejection) => {
        expectTypeOf(rejection).toEqualTypeOf<Rejection>()
        res.status(rejection.status).end()
      },
    })
    expectTypeOf(mw).toExtend<RequestHandler>()
    expectTypeOf(mw).toEqualTypeOf<RateLimitMiddleware>()
    expectTypeOf(mw.limiter).toEqualTypeOf<Limiter<Request>>()
    rateLimit(createLimiter<Request>({ rules: [] }), { cost: 10 })
  })

  it('rejects wrong option types', () => {
    // @ts-expect-error headers takes a boolean or a draft name
    rateLimit([], { headers: 'draft-7' })
    // @ts-expect-error cost is a number or a function
    rateLimit([], { cost: '10' })
    expectTypeOf<ExpressRateLimitOptions['skip']>().toEqualTypeOf<
      ((req: Request) => boolean) | undefined
    >()
  })
})
