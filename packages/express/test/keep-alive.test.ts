import { createServer } from 'node:http'
import type { Limiter } from '@floodgate/core'
import { describeKeepAliveProperty, listenOnLoopback } from '@floodgate/core/testing'
import { rateLimit } from '@floodgate/express'
import express, { type Request } from 'express'

describeKeepAliveProperty('express', (limiter) => {
  const app = express()
  app.use(rateLimit(limiter as Limiter<Request>))
  app.all('/x', (_req, res) => void res.send('ok'))
  app.get('/boom', () => {
    throw new Error('boom')
  })
  // Express's own 500 page, without its stack trace on stderr.
  app.set('env', 'test')
  return listenOnLoopback(createServer(app))
})
