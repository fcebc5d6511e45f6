import { createServer } from 'node:http'
import { describeMissingAddressWarning } from '@floodgate/core/testing'
import { rateLimit } from '@floodgate/koa'
import Koa from 'koa'

describeMissingAddressWarning('koa', async (socketPath, logger) => {
  const app = new Koa()
  app.use(rateLimit([{ id: 'per-ip', limit: 1, window: '1m' }], { logger }))
  app.use((ctx) => {
    ctx.body = 'ok'
  })
  const server = createServer((req, res) => void app.callback()(req, res))
  await new Promise<void>((resolve) => server.listen(socketPath, resolve))
  return { close: () => new Promise<void>((resolve) => server.close(() => resolve())) }
})
