import type { AddressInfo } from 'node:net'
import { rateLimit } from '@floodgate/koa'
import { describeAdaptiveShedding } from '@floodgate/core/testing'
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
  const server = app.listen(0, '127.0.0.1')
  await new Promise<void>((resolve) => server.once('listening', resolve))
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections()
        server.close(() => resolve())
      }),
  }
})
