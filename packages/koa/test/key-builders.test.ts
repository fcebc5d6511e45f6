import { createServer } from 'node:http'
import { rateLimit } from '@floodgate/koa'
import { describeClientChosenKeys, listenOnLoopback } from '@floodgate/core/testing'
import type { Limiter } from '@floodgate/core'
import Koa, { type Context } from 'koa'

describeClientChosenKeys('koa', (limiter) => {
  const app = new Koa()
  app.use(rateLimit(limiter as Limiter<Context>))
  app.use((ctx) => {
    if (ctx.path === '/items') ctx.body = 'ok'
  })
  return listenOnLoopback(createServer((req, res) => void app.callback()(req, res)))
})
