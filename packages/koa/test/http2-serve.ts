import { createServer, type Http2ServerRequest } from 'node:http2'
import type { AddressInfo } from 'node:net'
import type { Limiter } from '@floodgate/core'
import type { Http2Serve } from '@floodgate/core/testing'
import { rateLimit } from '@floodgate/koa'
import Koa, { type Context } from 'koa'

/** Koa's callback runs unchanged under node:http2's compatibility API. */
export const serveKoaHttp2: Http2Serve = async (limiter, enter, errors) => {
  const app = new Koa()
  app.on('error', (err) => errors.push(err))
  app.use(rateLimit(limiter as Limiter<Context>))
  app.use(async (ctx) => {
    // Koa types `ctx.req` as HTTP/1.1's request; on this server it is HTTP/2's.
    await enter(ctx.path, ctx.req as unknown as Http2ServerRequest)
    ctx.body = 'ok'
  })
  const server = createServer((req, res) => void app.callback()(req, res))
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return {
    port: (server.address() as AddressInfo).port,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  }
}
