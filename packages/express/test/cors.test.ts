import { createServer } from 'node:http'
import { rateLimit, type ExpressRateLimitOptions } from '@floodgate/express'
import express, { type NextFunction, type Request, type Response } from 'express'
import { describeCorsExposure, listenOnLoopback } from '@floodgate/core/testing'
import { afterEach, describe, expect, it } from 'vitest'

// A CORS middleware shaped like `cors`: it answers preflights itself and exposes its own names.
function cors(req: Request, res: Response, next: NextFunction): void {
  res.setHeader('Access-Control-Allow-Origin', '*')
  res.setHeader('Access-Control-Expose-Headers', 'X-Request-Id, ratelimit')
  if (req.method === 'OPTIONS' && req.get('access-control-request-method')) {
    res.status(204).end()
    return
  }
  next()
}

const closers: Array<() => Promise<void>> = []
afterEach(async () => {
  await Promise.all(closers.splice(0).map((close) => close()))
})

async function serve(options: ExpressRateLimitOptions, withCors: boolean): Promise<string> {
  const app = express()
  if (withCors) app.use(cors)
  app.use(rateLimit([{ id: 'per-ip', limit: 1, window: '1m' }], options))
  app.put('/items', (_req, res) => void res.send('ok'))
  const { url, close } = await listenOnLoopback(createServer(app))
  closers.push(close)
  return `${url}/items`
}

describeCorsExposure('express', serve)

describe('express: exposeHeaders option', () => {
  it('refuses a non-boolean exposeHeaders at construction', () => {
    expect(() => rateLimit([], { exposeHeaders: 'yes' as never })).toThrow(
      /options\.exposeHeaders: expected a boolean/,
    )
  })
})
