import { createServer } from 'node:http'
import { rateLimit } from '@floodgate/express'
import { describeAdaptiveShedding, listenOnLoopback } from '@floodgate/core/testing'
import express, { type Request } from 'express'
import type { Limiter } from '@floodgate/core'

describeAdaptiveShedding('express', async (limiter, work) => {
  const app = express()
  app.use(rateLimit(limiter as Limiter<Request>))
  app.get('/work', async (_req, res) => {
    await work()
    res.send('ok')
  })
  return listenOnLoopback(createServer(app))
})
