import { rateLimit, type RateLimitInfo } from '@floodgate/express'
import express, { type RequestHandler } from 'express'
import request from 'supertest'
import { describe, it } from 'vitest'

// req.rateLimit is kept in res.locals behind an accessor on the app's request prototype (a new
// property on an Express request costs thousands of instructions). These tests hold every way a
// handler reads or writes it to what a plain property gave.

const rules = (limit: number) => [{ id: 'per-ip', limit, window: '1m' }]
const report: RequestHandler = (req, res) => {
  const info: RateLimitInfo | undefined = req.rateLimit
  res.json(info === undefined ? { none: true } : { limit: info.limit, remaining: info.remaining })
}

describe('req.rateLimit', () => {
  it('is read by the next handler, and by a handler of a sub-app mounted after the limiter', async () => {
    const app = express()
    app.use(rateLimit(rules(5)))
    app.get('/here', report)
    const sub = express()
    sub.get('/there', report)
    app.use('/sub', sub)
    await request(app).get('/here').expect(200, { limit: 5, remaining: 4 })
    await request(app).get('/sub/there').expect(200, { limit: 5, remaining: 3 })
  })

  it('stays readable in the parent app after a sub-app whose limiter judged the request', async () => {
    const app = express()
    const sub = express()
    sub.use(rateLimit(rules(7)))
    sub.get('/inside', (_req, _res, next) => next('router'))
    app.use('/sub', sub)
    app.get('/sub/inside', report)
    await request(app).get('/sub/inside').expect(200, { limit: 7, remaining: 6 })
  })

  it('is the last writer: a later limiter, or the application assigning it', async () => {
    const app = express()
    app.use(rateLimit(rules(5)))
    app.get('/two', rateLimit(rules(9)), report)
    app.get(
      '/assigned',
      (req, _res, next) => {
        req.rateLimit = { ...req.rateLimit!, limit: 42 }
        next()
      },
      report,
    )
    await request(app).get('/two').expect(200, { limit: 9, remaining: 8 })
    await request(app).get('/assigned').expect(200, { limit: 42, remaining: 3 })
  })

  it('is absent on a request no mount judged, and per request (never a previous one)', async () => {
    const app = express()
    app.get('/free', report)
    app.get('/limited', rateLimit(rules(5)), report)
    await request(app).get('/limited').expect(200, { limit: 5, remaining: 4 })
    await request(app).get('/free').expect(200, { none: true })
    await request(app).get('/limited').expect(200, { limit: 5, remaining: 3 })
  })

  it('is a plain property when the app already defines rateLimit on its request prototype', async () => {
    const app = express()
    Object.defineProperty(app.request, 'rateLimit', { value: 'theirs', writable: true })
    app.use(rateLimit(rules(5)))
    app.get('/', (req, res) => {
      res.json({ own: Object.hasOwn(req, 'rateLimit'), limit: req.rateLimit?.limit })
    })
    await request(app).get('/').expect(200, { own: true, limit: 5 })
  })
})
