import { createServer } from 'node:http'
import Router from '@koa/router'
import type { Limiter } from '@floodgate/core'
import {
  describeSpellingProperty,
  type SpellingVariant,
  listenOnLoopback,
} from '@floodgate/core/testing'
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
      return listenOnLoopback(createServer((req, res) => void app.callback()(req, res)))
    },
  }
}

describeSpellingProperty('koa', [
  variant('default routing', false, false),
  variant('case-sensitive, strict routing', true, true),
])
