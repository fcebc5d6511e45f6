import { createLimiter, type Decision, type Limiter } from '@floodgate/core'
import { type HeaderFormat, type Rejection } from '@floodgate/core/http'
import {
  rateLimit,
  type ExpressRateLimitOptions,
  type RateLimitInfo,
  type RateLimitMiddleware,
} from '@floodgate/express'
import type { Request, RequestHandler } from 'express'
import { describe, expectTypeOf, it } from 'vitest'

describe('@floodgate/express types', () => {
  it('types req.rateLimit in every handler (module augmentation)', () => {
    const handler: RequestHandler = (req, res) => {
      expectTypeOf(req.rateLimit).toEqualTypeOf<RateLimitInfo | undefined>()
      if (req.rateLimit) {
        expectTypeOf(req.rateLimit.limit).toEqualTypeOf<number>()
        expectTypeOf(req.rateLimit.remaining).toEqualTypeOf<number>()
        expectTypeOf(req.rateLimit.resetMs).toEqualTypeOf<number>()
        expectTypeOf(req.rateLimit.decision).toEqualTypeOf<Decision>()
      }
      res.end()
    }
    const typed = (req: Request) => req.rateLimit?.remaining
    expectTypeOf(typed).returns.toEqualTypeOf<number | undefined>()
    void handler
  })

  it('accepts rules, a shared limiter, and typed options', () => {
    const mw = rateLimit([{ id: 'a', limit: 10, window: '1m' }], {
      keys: { user: (req) => req.get('x-user') },
      skip: (req) => req.path === '/health',
      cost: (req) => (req.method === 'POST' ? 5 : 1),
      headers: 'both',
      onRejected: (_req, res, _next, rejection) => {
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
    // @ts-expect-error headers takes a boolean or a HeaderFormat
    rateLimit([], { headers: 'draft-8' })
    rateLimit([], { headers: 'draft-7', warnings: false, denyStatus: 404, unmatched: 'reject' })
    // @ts-expect-error unmatched is 'allow' or 'reject'
    rateLimit([], { unmatched: 'deny' })
    expectTypeOf<ExpressRateLimitOptions['headers']>().toEqualTypeOf<
      boolean | HeaderFormat | undefined
    >()
    // @ts-expect-error cost is a number or a function
    rateLimit([], { cost: '10' })
    expectTypeOf<ExpressRateLimitOptions['skip']>().toEqualTypeOf<
      ((req: Request) => boolean) | undefined
    >()
  })
})
