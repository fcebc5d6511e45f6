import { createServer } from 'node:http'
import type { Limiter } from '@floodgate/core'
import { describeFileServerSpellings, listenOnLoopback } from '@floodgate/core/testing'
import { rateLimit } from '@floodgate/express'
import express, { type Request } from 'express'

// Express's own file server, mounted at the root after the limiter.
describeFileServerSpellings('express', async (limiter, root) => {
  const app = express()
  app.use(rateLimit(limiter as unknown as Limiter<Request>))
  app.use(express.static(root))
  return listenOnLoopback(createServer(app))
})
