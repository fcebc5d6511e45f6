import { createServer } from 'node:http'
import { rateLimit } from '@floodgate/koa'
import { describeAdaptiveShedding, listenOnLoopback } from '@floodgate/core/testing'
import type { Limiter } from '@floodgate/core'
import Koa, { type Context } from 'koa'

describeAdaptiveShedding('koa', async (limiter, work) => {
  const app = new Koa()
  app.use(rateLimit(limiter as Limiter<Context>))
  app.use(async (ctx) => {
    if (ctx.path !== '/work') return
    await work()
    ctx.body = 'ok'
  })
  return listenOnLoopback(createServer((req, res) => void app.callback()(req, res)))
})
