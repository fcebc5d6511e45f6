import type { AddressInfo } from 'node:net'
import Router from '@koa/router'
import type { Limiter } from '@floodgate/core'
import { describeSpellingProperty, type SpellingVariant } from '@floodgate/core/testing'
import { rateLimit } from '@floodgate/koa'
import Koa, { type Context } from 'koa'

function variant(name: string, sensitive: boolean, strict: boolean): SpellingVariant {
  return {
    name,
    async start(limiter, routes) {
      const app = new Koa()
      const router = new Router({ sensitive, strict })
      app.use(rateLimit(limiter as unknown as Limiter<Context>))
      for (const r of routes) {
        router[r.method === 'GET' ? 'get' : 'post'](r.path, (ctx) => {
          ctx.body = { route: r.path, params: ctx.params }
        })
      }
      app.use(router.routes())
      const server = app.listen(0, '127.0.0.1')
      await new Promise<void>((resolve) => server.once('listening', resolve))
      return {
        port: (server.address() as AddressInfo).port,
        close: () =>
          new Promise<void>((resolve) => {
            server.closeAllConnections()
            server.close(() => resolve())
          }),
      }
    },
  }
}

describeSpellingProperty('koa', [
  variant('default routing', false, false),
  variant('case-sensitive, strict routing', true, true),
])
