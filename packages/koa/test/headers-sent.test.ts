import { createServer } from 'node:http'
import type { Limiter } from '@floodgate/core'
import { describeHeadersAlreadySent, listenOnLoopback } from '@floodgate/core/testing'
import { rateLimit } from '@floodgate/koa'
import Koa, { type Context } from 'koa'

describeHeadersAlreadySent('koa', (limiter, options, errors) => {
  const app = new Koa()
  app.on('error', (err) => errors.push(err))
  app.use(async (ctx, next) => {
    ctx.status = 200
    ctx.res.flushHeaders()
    await next()
  })
  app.use(
    rateLimit(limiter as Limiter<Context>, {
      headers: options.headers,
      shadowHeader: options.shadowHeader,
      onRejected: options.customRejection
        ? (ctx, { status }) => {
            ctx.status = status
            ctx.body = 'limited'
          }
        : undefined,
    }),
  )
  app.use((ctx) => {
    ctx.body = 'handled'
  })
  return listenOnLoopback(createServer((req, res) => void app.callback()(req, res)))
})
