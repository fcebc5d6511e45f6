import { createServer } from 'node:http'
import { describeMissingAddressWarning } from '@floodgate/core/testing'
import { rateLimit } from '@floodgate/express'
import express from 'express'

describeMissingAddressWarning('express', async (socketPath, logger) => {
  const app = express()
  app.use(rateLimit([{ id: 'per-ip', limit: 1, window: '1m' }], { logger }))
  app.get('/', (_req, res) => void res.send('ok'))
  const server = createServer(app)
  await new Promise<void>((resolve) => server.listen(socketPath, resolve))
  return { close: () => new Promise<void>((resolve) => server.close(() => resolve())) }
})
