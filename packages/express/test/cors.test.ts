import type { AddressInfo } from 'node:net'
import { rateLimit, type ExpressRateLimitOptions } from '@floodgate/express'
import express, { type NextFunction, type Request, type Response } from 'express'
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

let close: (() => Promise<void>) | undefined
afterEach(async () => {
  await close?.()
  close = undefined
})

async function serve(options: ExpressRateLimitOptions, withCors: boolean): Promise<string> {
  const app = express()
  if (withCors) app.use(cors)
  app.use(rateLimit([{ id: 'per-ip', limit: 1, window: '1m' }], options))
  app.put('/items', (_req, res) => void res.send('ok'))
  const server = app.listen(0, '127.0.0.1')
  await new Promise<void>((resolve) => server.once('listening', resolve))
  close = () =>
    new Promise<void>((resolve) => {
      server.closeAllConnections()
      server.close(() => resolve())
    })
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}/items`
}

const origin = { origin: 'https://app.example' }
const preflight = {
  method: 'OPTIONS',
  headers: { ...origin, 'access-control-request-method': 'PUT' },
}

describe('express: CORS', () => {
  it('exposes the limiter headers after the cors names, on allowed and refused requests', async () => {
    const url = await serve({ exposeHeaders: true }, true)
    const ok = await fetch(url, { method: 'PUT', headers: origin })
    expect(ok.status).toBe(200)
    expect(ok.headers.get('access-control-expose-headers')).toBe(
      'X-Request-Id, ratelimit, RateLimit-Policy, Retry-After',
    )
    const refused = await fetch(url, { method: 'PUT', headers: origin })
    expect(refused.status).toBe(429)
    expect(refused.headers.get('access-control-expose-headers')).toBe(
      'X-Request-Id, ratelimit, RateLimit-Policy, Retry-After',
    )
    expect(refused.headers.get('retry-after')).not.toBeNull()
  })

  it('does not charge preflights the cors middleware answers before the limiter', async () => {
    const url = await serve({ exposeHeaders: true }, true)
    for (let i = 0; i < 3; i++) expect((await fetch(url, preflight)).status).toBe(204)
    expect((await fetch(url, { method: 'PUT', headers: origin })).status).toBe(200)
  })

  it('names every header it may send, alone when no cors middleware ran, none when off', async () => {
    let url = await serve({ exposeHeaders: true, headers: 'both', shadowHeader: true }, false)
    expect((await fetch(url, { method: 'PUT' })).headers.get('access-control-expose-headers')).toBe(
      'RateLimit-Policy, RateLimit, X-RateLimit-Limit, X-RateLimit-Remaining, X-RateLimit-Reset, Retry-After, Floodgate-Shadow',
    )
    await close?.()
    url = await serve({}, false)
    expect(
      (await fetch(url, { method: 'PUT' })).headers.get('access-control-expose-headers'),
    ).toBeNull()
  })

  it('refuses a non-boolean exposeHeaders at construction', () => {
    expect(() => rateLimit([], { exposeHeaders: 'yes' as never })).toThrow(
      /options\.exposeHeaders: expected a boolean/,
    )
  })
})
