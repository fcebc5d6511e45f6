import { createServer } from 'node:http'
import { rateLimit } from '@floodgate/express'
import { describeClientChosenKeys, listenOnLoopback } from '@floodgate/core/testing'
import express, { type Request } from 'express'
import type { Limiter } from '@floodgate/core'

describeClientChosenKeys('express', (limiter) => {
  const app = express()
  app.use(rateLimit(limiter as Limiter<Request>))
  app.get('/items', (_req, res) => void res.send('ok'))
  return listenOnLoopback(createServer(app))
})
