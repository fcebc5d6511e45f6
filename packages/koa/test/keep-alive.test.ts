import { createServer } from 'node:http'
import type { Limiter } from '@floodgate/core'
import { describeKeepAliveProperty, listenOnLoopback } from '@floodgate/core/testing'
import { rateLimit } from '@floodgate/koa'
import Koa, { type Context } from 'koa'

describeKeepAliveProperty('koa', (limiter) => {
  const app = new Koa()
  // The thrown error is the point of /boom: Koa answers 500 without logging it.
  app.silent = true
  app.use(rateLimit(limiter as Limiter<Context>))
  app.use((ctx) => {
    if (ctx.path === '/boom') throw new Error('boom')
    ctx.body = 'ok'
  })
  return listenOnLoopback(createServer((req, res) => void app.callback()(req, res)))
})
