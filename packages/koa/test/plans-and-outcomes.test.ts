import { createServer } from 'node:http'
import { rateLimit } from '@floodgate/koa'
import { describePlansAndOutcomes, listenOnLoopback } from '@floodgate/core/testing'
import type { Limiter } from '@floodgate/core'
import Koa, { type Context } from 'koa'

describePlansAndOutcomes('koa', async (limiter, options) => {
  const app = new Koa()
  app.use(rateLimit(limiter as Limiter<Context>, options))
  app.use(async (ctx) => {
    if (ctx.path === '/items') ctx.body = 'ok'
    else if (ctx.path === '/login') {
      ctx.status = Number(ctx.get('x-status') || 200)
      ctx.body = ''
    } else if (ctx.path === '/hang') {
      // Never answers: the client goes away first.
      await new Promise<void>((resolve) => ctx.req.once('close', resolve))
      ctx.respond = false
    }
  })
  return listenOnLoopback(createServer((req, res) => void app.callback()(req, res)))
})
