import { createServer } from 'node:http'
import { rateLimit } from '@floodgate/express'
import { describePlansAndOutcomes, listenOnLoopback } from '@floodgate/core/testing'
import express, { type Request } from 'express'
import type { Limiter } from '@floodgate/core'

describePlansAndOutcomes('express', async (limiter, options) => {
  const app = express()
  app.use(rateLimit(limiter as Limiter<Request>, options))
  app.get('/items', (_req, res) => void res.send('ok'))
  app.post('/login', (req, res) => void res.status(Number(req.get('x-status') ?? 200)).end())
  // Never answers: the client goes away first.
  app.get('/hang', () => {})
  return listenOnLoopback(createServer(app))
})
