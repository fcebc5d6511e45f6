import type { AddressInfo } from 'node:net'
import { rateLimit } from '@floodgate/express'
import { describeAdaptiveShedding } from '@floodgate/core/testing'
import express, { type Request } from 'express'
import type { Limiter } from '@floodgate/core'

describeAdaptiveShedding('express', async (limiter, work) => {
  const app = express()
  app.use(rateLimit(limiter as Limiter<Request>))
  app.get('/work', async (_req, res) => {
    await work()
    res.send('ok')
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
