import { createServer } from 'node:http'
import { rateLimit, type KoaRateLimitOptions } from '@floodgate/koa'
import Koa, { type Context, type Next } from 'koa'
import { describeCorsExposure, listenOnLoopback } from '@floodgate/core/testing'
import { afterEach, describe, expect, it } from 'vitest'

// A CORS middleware shaped like `@koa/cors`: it answers preflights itself and exposes its own names.
async function cors(ctx: Context, next: Next): Promise<void> {
  ctx.set('Access-Control-Allow-Origin', '*')
  ctx.set('Access-Control-Expose-Headers', 'X-Request-Id, ratelimit')
  if (ctx.method === 'OPTIONS' && ctx.get('access-control-request-method')) {
    ctx.status = 204
    return
  }
  await next()
}

const closers: Array<() => Promise<void>> = []
afterEach(async () => {
  await Promise.all(closers.splice(0).map((close) => close()))
})

async function serve(options: KoaRateLimitOptions, withCors: boolean): Promise<string> {
  const app = new Koa()
  if (withCors) app.use(cors)
  app.use(rateLimit([{ id: 'per-ip', limit: 1, window: '1m' }], options))
  app.use((ctx) => {
    if (ctx.method === 'PUT' && ctx.path === '/items') ctx.body = 'ok'
  })
  const { url, close } = await listenOnLoopback(
    createServer((req, res) => void app.callback()(req, res)),
  )
  closers.push(close)
  return `${url}/items`
}

describeCorsExposure('koa', serve)

describe('koa: exposeHeaders option', () => {
  it('refuses a non-boolean exposeHeaders at construction', () => {
    expect(() => rateLimit([], { exposeHeaders: 'yes' as never })).toThrow(
      /options\.exposeHeaders: expected a boolean/,
    )
  })
})
