import { createServer } from 'node:http'
import type { Limiter } from '@floodgate/core'
import { describeHeadersAlreadySent, listenOnLoopback } from '@floodgate/core/testing'
import { rateLimit } from '@floodgate/express'
import express, { type NextFunction, type Request, type Response } from 'express'

describeHeadersAlreadySent('express', (limiter, options, errors) => {
  const app = express()
  app.use((_req, res, next) => {
    res.status(200).flushHeaders()
    next()
  })
  app.use(
    rateLimit(limiter as Limiter<Request>, {
      headers: options.headers,
      shadowHeader: options.shadowHeader,
      onRejected: options.customRejection
        ? (_req, res, _next, { status }) => void res.status(status).end('limited')
        : undefined,
    }),
  )
  app.get('/', (_req, res) => void res.end('handled'))
  app.use((err: unknown, _req: Request, res: Response, _next: NextFunction) => {
    errors.push(err)
    res.end()
  })
  return listenOnLoopback(createServer(app))
})
