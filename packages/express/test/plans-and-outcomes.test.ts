import type { AddressInfo } from 'node:net'
import { rateLimit } from '@floodgate/express'
import { describePlansAndOutcomes } from '@floodgate/core/testing'
import express, { type Request } from 'express'
import type { Limiter } from '@floodgate/core'

describePlansAndOutcomes('express', async (limiter, options) => {
  const app = express()
  app.use(rateLimit(limiter as Limiter<Request>, options))
  app.get('/items', (_req, res) => void res.send('ok'))
  app.post('/login', (req, res) => void res.status(Number(req.get('x-status') ?? 200)).end())
  // Never answers: the client goes away first.
  app.get('/hang', () => {})
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
